package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/strata-broker/strata/broker"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/test/harness"
)

// startTimeout bounds how long a system may take to become ready, and
// stopTimeout how long it may take to shut down.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second
)

// system is a running cluster under test.
type system struct {
	brokers []string
	stop    func() error   // shuts the system down and frees its resources
	strata  *broker.Server // the broker of a strata system, nil otherwise
	tls     *tls.Config    // clients dial brokers over TLS with this when set
}

// starter starts a fresh instance of one system.
type starter func(ctx context.Context, opts benchOptions) (*system, error)

// starters maps the -systems names to their starters.
var starters = map[string]starter{
	"strata": startStrata,
	"kfake":  startKfake,
}

// startStrata runs a single-node Strata broker in this process with an
// embedded etcd, its data in a new temporary directory.
func startStrata(ctx context.Context, opts benchOptions) (*system, error) {
	return startStrataWith(ctx, opts, nil)
}

// startStrataWith is startStrata with extra configuration keys (its
// listeners, say); the system's brokers are the first listener's address.
func startStrataWith(ctx context.Context, opts benchOptions, keys map[string]string) (*system, error) {
	dir, err := os.MkdirTemp(opts.dir, "strata-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: temp dir: %w", err)
	}
	cleanup := func() error {
		if opts.keep {
			fmt.Fprintf(os.Stderr, "bench: kept strata data in %s\n", dir)
			return nil
		}
		return os.RemoveAll(dir)
	}
	all := harness.BaseConfig(dir, 0)
	maps.Copy(all, keys)
	all["log.dirs"] = dir
	cfg, err := config.Parse(all)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("bench: strata config: %w", err), cleanup())
	}
	level := slog.LevelWarn
	if opts.verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	srv, err := broker.New(cfg, log)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("bench: strata broker.New: %w", err), cleanup())
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- srv.Run(runCtx) }()
	stop := func() error {
		cancel()
		t := time.NewTimer(stopTimeout)
		defer t.Stop()
		var runErr error
		select {
		case runErr = <-done:
			if runErr != nil {
				runErr = fmt.Errorf("bench: strata Run: %w", runErr)
			}
		case <-t.C:
			// Leave the directory: the broker may still be writing to it.
			return fmt.Errorf("bench: strata did not stop within %s (data left in %s)", stopTimeout, dir)
		}
		return errors.Join(runErr, cleanup())
	}
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case <-srv.Ready():
		return &system{brokers: []string{srv.Addr()}, stop: stop, strata: srv}, nil
	case err := <-done:
		done <- err // let stop see it too
		return nil, errors.Join(fmt.Errorf("bench: strata exited before ready: %v", err), stop())
	case <-t.C:
		return nil, errors.Join(fmt.Errorf("bench: strata not ready within %s", startTimeout), stop())
	case <-ctx.Done():
		return nil, errors.Join(ctx.Err(), stop())
	}
}

// startKfake runs franz-go's in-memory fake cluster with one broker.
func startKfake(context.Context, benchOptions) (*system, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, fmt.Errorf("bench: kfake: %w", err)
	}
	return &system{brokers: c.ListenAddrs(), stop: func() error { c.Close(); return nil }}, nil
}
