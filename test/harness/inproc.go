package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/broker"
	"github.com/strata-broker/strata/config"
)

// startTimeout bounds how long a broker may take to become ready or stop.
const startTimeout = 60 * time.Second

// Broker is a Strata broker running inside the test process.
type Broker struct {
	t         testing.TB
	settings  map[string]string // config keys passed to config.Parse
	logPath   string
	logFile   *os.File
	mu        sync.Mutex // guards addr
	addr      string
	srv       *broker.Server
	cancel    context.CancelFunc
	done      chan error // receives Run's result once
	running   bool
	tailShown bool
}

// Start runs a broker in-process with a loopback listener on a port chosen
// by the kernel, log.dirs in a fresh t.TempDir(), embedded etcd and no
// metrics listener; overrides (Kafka config key names) win over these. It
// waits until the broker is ready and stops it when the test ends.
func Start(t testing.TB, overrides map[string]string) *Broker {
	t.Helper()
	dir := t.TempDir()
	b := &Broker{t: t, logPath: filepath.Join(dir, "broker.log")}
	b.settings = BaseConfig(filepath.Join(dir, "data"), 0)
	maps.Copy(b.settings, overrides)
	f, err := os.OpenFile(b.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("harness: open broker log: %v", err)
	}
	b.logFile = f
	t.Cleanup(func() {
		b.Stop()
		b.showTail()
		b.logFile.Close()
	})
	b.start()
	return b
}

// BaseConfig is the configuration every harness broker starts from: one
// plaintext listener on 127.0.0.1:port (0 = kernel's choice), log.dirs at
// dataDir, embedded etcd (no endpoints), no metrics listener and no web
// console (a test that wants one sets console.listener to 127.0.0.1:0).
func BaseConfig(dataDir string, port int) map[string]string {
	return map[string]string{
		"listeners":               "PLAINTEXT://127.0.0.1:" + strconv.Itoa(port),
		"log.dirs":                dataDir,
		"metadata.etcd.endpoints": "",
		"metrics.listener":        "",
		"console.listener":        "",
	}
}

// Addr is the host:port of the broker's Kafka listener.
func (b *Broker) Addr() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.addr
}

// Dir is the broker's data directory (log.dirs).
func (b *Broker) Dir() string { return b.settings["log.dirs"] }

// Server is the running broker.Server (nil while stopped).
func (b *Broker) Server() *broker.Server { return b.srv }

// Client returns a franz-go client for this broker, closed at test end.
func (b *Broker) Client(opts ...kgo.Opt) *kgo.Client { return NewClient(b.t, b.Addr(), opts...) }

// Admin returns a kadm client for this broker, closed at test end.
func (b *Broker) Admin() *kadm.Client { return NewAdmin(b.t, b.Addr()) }

func (b *Broker) start() {
	b.t.Helper()
	cfg, err := config.Parse(b.settings)
	if err != nil {
		b.t.Fatalf("harness: parse broker config %v: %v", b.settings, err)
	}
	lvl := slog.LevelInfo
	if os.Getenv("STRATA_LOG") == "debug" {
		lvl = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(b.logFile, &slog.HandlerOptions{Level: lvl}))
	srv, err := broker.New(cfg, log)
	if err != nil {
		b.t.Fatalf("harness: new broker: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case <-srv.Ready():
	case err := <-done:
		cancel()
		b.t.Fatalf("harness: broker exited before ready: %v\n%s", err, logTail(b.logPath, 40))
	case <-time.After(startTimeout):
		cancel()
		b.t.Fatalf("harness: broker not ready after %v\n%s", startTimeout, logTail(b.logPath, 40))
	}
	b.srv, b.cancel, b.done, b.running = srv, cancel, done, true
	addr := srv.Addr()
	b.mu.Lock()
	b.addr = addr
	b.mu.Unlock()
	// Keep the port across restarts so clients reconnect to the same
	// address (for the one-PLAINTEXT-listener configuration).
	if l := b.settings["listeners"]; strings.HasPrefix(l, "PLAINTEXT://127.0.0.1:") && !strings.Contains(l, ",") {
		_, port, _ := net.SplitHostPort(addr)
		b.settings["listeners"] = "PLAINTEXT://127.0.0.1:" + port
	}
}

// Log is what the broker logged so far.
func (b *Broker) Log() string {
	out, err := os.ReadFile(b.logPath)
	if err != nil {
		b.t.Fatalf("harness: read broker log: %v", err)
	}
	return string(out)
}

// Stop shuts the broker down cleanly and waits for Run to return. Stopping
// a stopped broker does nothing.
func (b *Broker) Stop() {
	b.t.Helper()
	if !b.running {
		return
	}
	b.running = false
	b.cancel()
	select {
	case err := <-b.done:
		if err != nil && !errors.Is(err, context.Canceled) {
			b.t.Errorf("harness: broker Run returned %v", err)
		}
	case <-time.After(startTimeout):
		b.t.Errorf("harness: broker did not stop within %v", startTimeout)
	}
	b.srv = nil
}

// Restart stops the broker and starts a new one on the same directories,
// configuration and port.
func (b *Broker) Restart() {
	b.t.Helper()
	b.Stop()
	fmt.Fprintf(b.logFile, "=== harness: restart ===\n")
	b.start()
}

func (b *Broker) showTail() {
	if b.t.Failed() && !b.tailShown {
		b.tailShown = true
		b.t.Logf("broker log tail (%s):\n%s", b.logPath, logTail(b.logPath, 60))
	}
}
