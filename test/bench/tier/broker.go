package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/strata-broker/strata/broker"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/test/harness"
	"github.com/strata-broker/strata/test/minio"
)

// startTimeout bounds how long the broker may take to become ready, and
// stopTimeout how long it may take to shut down.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second
)

// node is the broker running in this process.
type node struct {
	addr   string
	cancel context.CancelFunc
	done   chan error
}

// brokerConfig is the broker's configuration: data in dir, the tier in
// the MinIO bucket, every remote.log.* key at its default.
func brokerConfig(dir string, s3 *minio.Server) map[string]string {
	cfg := harness.BaseConfig(dir, 0)
	maps.Copy(cfg, map[string]string{
		"remote.log.storage.system.enable": "true",
		"remote.log.storage.backend":       "s3",
		"remote.log.storage.s3.bucket":     s3.Bucket,
		"remote.log.storage.s3.endpoint":   s3.Endpoint,
		"remote.log.storage.s3.region":     s3.Region,
		"remote.log.storage.s3.access.key": s3.AccessKey,
		"remote.log.storage.s3.secret.key": s3.SecretKey,
		"remote.log.storage.s3.path.style": "true",
	})
	return cfg
}

// startBroker runs a broker with settings in this process until stop.
func startBroker(ctx context.Context, settings map[string]string, log *slog.Logger) (*node, error) {
	cfg, err := config.Parse(settings)
	if err != nil {
		return nil, fmt.Errorf("tier bench: broker config: %w", err)
	}
	srv, err := broker.New(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("tier bench: broker.New: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n := &node{cancel: cancel, done: make(chan error, 1)}
	go func() { n.done <- srv.Run(runCtx) }()
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case <-srv.Ready():
		n.addr = srv.Addr()
		return n, nil
	case err := <-n.done:
		n.done <- err // let stop see it too
		return nil, errors.Join(fmt.Errorf("tier bench: broker exited before ready: %v", err), n.stop())
	case <-t.C:
		return nil, errors.Join(fmt.Errorf("tier bench: broker not ready within %s", startTimeout), n.stop())
	case <-ctx.Done():
		return nil, errors.Join(ctx.Err(), n.stop())
	}
}

// stop shuts the broker down and waits for its Run to return.
func (n *node) stop() error {
	n.cancel()
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	select {
	case err := <-n.done:
		if err != nil {
			return fmt.Errorf("tier bench: broker Run: %w", err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("tier bench: broker did not stop within %s", stopTimeout)
	}
}
