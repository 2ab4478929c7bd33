package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/strata-broker/strata/broker"
	"github.com/strata-broker/strata/config"
)

// runServe loads the configuration, sets up logging and runs a broker
// until ctx is cancelled (SIGINT or SIGTERM).
func runServe(ctx context.Context, args []string, _, stderr io.Writer) error {
	cfg, err := loadConfig("serve", args, stderr, nil)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	etcd := "embedded"
	if len(cfg.EtcdEndpoints) > 0 {
		etcd = strings.Join(cfg.EtcdEndpoints, ",")
	}
	log.Info("starting strata", "version", version, "node.id", cfg.NodeID,
		"listeners", strings.Join(cfg.Listeners, ","), "log.dirs", strings.Join(cfg.LogDirs, ","), "etcd", etcd)
	if set := explicitSettings(cfg); len(set) > 0 {
		log.Info("configuration", set...)
	}
	srv, err := broker.New(cfg, log)
	if err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	if err := srv.Run(ctx); err != nil {
		return fmt.Errorf("broker stopped: %w", err)
	}
	log.Info("strata stopped")
	return nil
}

// explicitSettings lists the keys set in the file or with --set, secrets
// hidden, as log attributes.
func explicitSettings(cfg *config.Broker) []any {
	var attrs []any
	for _, e := range cfg.DescribeBroker() {
		if e.Source != config.SourceStaticBroker {
			continue
		}
		v := cfg.Raw[e.Name]
		if e.Sensitive {
			v = "[hidden]"
		}
		attrs = append(attrs, slog.String(e.Name, v))
	}
	return attrs
}
