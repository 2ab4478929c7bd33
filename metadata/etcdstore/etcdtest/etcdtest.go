// Package etcdtest shares one embedded etcd among the tests of a test
// binary and gives each test its own key prefix on it, so the tests of
// etcdstore, of the controller and the metadata conformance suite run
// against real etcd without starting a server per test.
//
// It does not import etcdstore (whose own tests use it): Main takes the
// server's start function, etcdstore.StartEmbedded.
//
// # Concurrency
//
// Main sets the shared server before any test runs and closes it after
// all returned; Prefix may be called from any test goroutine (a sync.Map
// keyed by the test holds the prefixes).
package etcdtest

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is a running etcd: *etcdstore.Embedded.
type Server interface {
	Endpoints() []string
	Close()
}

// shared is the binary's server, set by Main.
var shared Server

// Main starts a server with start in a temporary directory, runs the
// tests and stops the server; it exits the process with the tests'
// status. Call it from TestMain:
//
//	func TestMain(m *testing.M) { etcdtest.Main(m, etcdstore.StartEmbedded) }
func Main[S Server](m *testing.M, start func(dir string, log *slog.Logger) (S, error)) {
	dir, err := os.MkdirTemp("", "etcdtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv, err := start(dir, Logger())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	shared = srv
	code := m.Run()
	srv.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Endpoints are the shared server's client URLs.
func Endpoints() []string {
	if shared == nil {
		panic("etcdtest: no server; call etcdtest.Main from TestMain")
	}
	return shared.Endpoints()
}

// Logger logs warnings and errors to stderr, for stores and servers under
// test.
func Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// Context is bounded so that a hang fails the test rather than the run.
func Context(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// prefixes remembers each running test's prefix; seq makes prefixes
// unique also across -count repetitions on the one shared server.
var (
	prefixes sync.Map // testing.TB → string
	seq      atomic.Int64
)

// Prefix is the test's own key prefix on the shared server: the same for
// every call within one test (so all its stores share a key space) and
// different for every other test.
func Prefix(t testing.TB) string {
	fresh := fmt.Sprintf("/test/%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), seq.Add(1))
	p, loaded := prefixes.LoadOrStore(t, fresh)
	if !loaded {
		t.Cleanup(func() { prefixes.Delete(t) })
	}
	return p.(string)
}
