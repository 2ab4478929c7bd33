package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/strata-broker/strata/broker"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/test/harness"
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

// serveOptions are the settings a system starts with.
type serveOptions struct {
	verbose      bool
	initialDelay time.Duration // strata's group.initial.rebalance.delay.ms
}

// args are the command-line flags that pass o to a child process.
func (o serveOptions) args() []string {
	args := []string{"-initial-delay", o.initialDelay.String()}
	if o.verbose {
		args = append(args, "-v")
	}
	return args
}

// startStrata runs a Strata broker in this process (embedded etcd, data in
// a temporary directory) with group.initial.rebalance.delay.ms from o.
func startStrata(ctx context.Context, o serveOptions) (*system, error) {
	dir, err := os.MkdirTemp("", "strata-groups-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: temp dir: %w", err)
	}
	keys := harness.BaseConfig(dir, 0)
	keys["group.initial.rebalance.delay.ms"] = fmt.Sprint(o.initialDelay.Milliseconds())
	cfg, err := config.Parse(keys)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("bench: strata config: %w", err), os.RemoveAll(dir))
	}
	level := slog.LevelError // connections closed at shutdown warn
	if o.verbose {
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
func startKfake(context.Context, serveOptions) (*system, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, fmt.Errorf("bench: kfake: %w", err)
	}
	return &system{addr: c.ListenAddrs()[0], stop: func() error { c.Close(); return nil }}, nil
}

// serve runs system name in this process for a parent bench process: it
// prints the listen address as the first line of stdout and stops once
// stdin closes (the parent closes it, or dies).
func serve(ctx context.Context, name string, o serveOptions) error {
	start, ok := starters[name]
	if !ok {
		return fmt.Errorf("bench: unknown system %q", name)
	}
	sys, err := start(ctx, o)
	if err != nil {
		return err
	}
	fmt.Println(sys.addr)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return sys.stop()
}

// starters are the systems by name, started in this process.
var starters = map[string]func(context.Context, serveOptions) (*system, error){
	"strata": startStrata,
	"kfake":  startKfake,
}

// startProcess runs system name in a child process (this binary with
// -serve), as a broker runs in production: its heap, garbage collector and
// goroutines are its own, not shared with the clients measuring it.
func startProcess(name string) func(context.Context, serveOptions) (*system, error) {
	return func(ctx context.Context, o serveOptions) (*system, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("bench: executable: %w", err)
		}
		args := append([]string{"-serve", name}, o.args()...)
		cmd := exec.Command(exe, args...)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, fmt.Errorf("bench: %s stdin: %w", name, err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, fmt.Errorf("bench: %s stdout: %w", name, err)
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("bench: start %s: %w", name, err)
		}
		exited := make(chan error, 1)
		stop := func() error {
			_ = stdin.Close()
			select {
			case err := <-exited:
				return err
			case <-time.After(stopTimeout):
				_ = cmd.Process.Kill()
				return fmt.Errorf("bench: %s did not stop within %s", name, stopTimeout)
			}
		}
		addr := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			if sc.Scan() {
				addr <- sc.Text()
			}
			_, _ = io.Copy(io.Discard, stdout)
			if err := cmd.Wait(); err != nil {
				exited <- fmt.Errorf("bench: %s process: %w", name, err)
			}
			close(exited)
		}()
		select {
		case a := <-addr:
			return &system{addr: a, stop: stop}, nil
		case err := <-exited:
			return nil, fmt.Errorf("bench: %s exited before serving: %v", name, err)
		case <-time.After(startTimeout):
			return nil, errors.Join(fmt.Errorf("bench: %s not serving within %s", name, startTimeout), stop())
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), stop())
		}
	}
}
