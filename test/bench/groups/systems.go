package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/strata-broker/strata/broker"
	"github.com/strata-broker/strata/config"
)

// Start and stop bounds of a system under test.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second
)

// system is a running single-broker cluster under test.
type system struct {
	addr string
	stop func() error
}

// startStrata runs a Strata broker in this process (embedded etcd, data in
// a temporary directory). group.initial.rebalance.delay.ms is 0 so that
// the rebalance measure compares the protocol work, not Kafka's deliberate
// first-join wait (kfake has none).
func startStrata(ctx context.Context, verbose bool) (*system, error) {
	dir, err := os.MkdirTemp("", "strata-groups-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: temp dir: %w", err)
	}
	cfg, err := config.Parse(map[string]string{
		"listeners":                        "127.0.0.1:0",
		"log.dirs":                         dir,
		"metrics.listener":                 "",
		"group.initial.rebalance.delay.ms": "0",
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("bench: strata config: %w", err), os.RemoveAll(dir))
	}
	level := slog.LevelError // connections closed at shutdown warn
	if verbose {
		level = slog.LevelInfo
	}
	srv, err := broker.New(cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("bench: strata broker.New: %w", err), os.RemoveAll(dir))
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx) }()
	stop := func() error {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				return errors.Join(fmt.Errorf("bench: strata Run: %w", err), os.RemoveAll(dir))
			}
			return os.RemoveAll(dir)
		case <-time.After(stopTimeout):
			return fmt.Errorf("bench: strata did not stop within %s (data left in %s)", stopTimeout, dir)
		}
	}
	select {
	case <-srv.Ready():
		return &system{addr: srv.Addr(), stop: stop}, nil
	case err := <-done:
		done <- err
		return nil, errors.Join(fmt.Errorf("bench: strata exited before ready: %v", err), stop())
	case <-time.After(startTimeout):
		return nil, errors.Join(fmt.Errorf("bench: strata not ready within %s", startTimeout), stop())
	}
}

// startKfake runs franz-go's in-memory fake cluster with one broker.
func startKfake(context.Context, bool) (*system, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, fmt.Errorf("bench: kfake: %w", err)
	}
	return &system{addr: c.ListenAddrs()[0], stop: func() error { c.Close(); return nil }}, nil
}
