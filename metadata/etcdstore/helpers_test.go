package etcdstore

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

	"github.com/strata-broker/strata/metadata"
)

// shared is one embedded etcd for the whole package; tests isolate
// themselves with their own key prefix.
var shared *Embedded

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "etcdstore-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared, err = StartEmbedded(dir, testLogger())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	shared.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

func testLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testCtx is bounded so a hang fails the test instead of the whole run.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// prefixes remembers each running test's prefix; seq makes prefixes
// unique also across -count repetitions on the one shared server.
var (
	prefixes sync.Map // *testing.T → string
	seq      atomic.Int64
)

// prefixFor gives each test its own key space on the shared server; all
// stores a test opens share it.
func prefixFor(t *testing.T) string {
	fresh := fmt.Sprintf("/test/%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), seq.Add(1))
	p, _ := prefixes.LoadOrStore(t, fresh)
	return p.(string)
}

// openStore opens a store on the shared server under the test's prefix.
func openStore(t *testing.T) *Store {
	t.Helper()
	return openAt(t, shared.Endpoints(), prefixFor(t))
}

func openAt(t *testing.T, endpoints []string, prefix string) *Store {
	t.Helper()
	s, err := Open(testCtx(t), endpoints, prefix, testLogger())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// part builds a partition state led by the first replica, all in sync.
func part(replicas ...int32) metadata.PartitionState {
	return metadata.PartitionState{Replicas: replicas, Leader: replicas[0], ISR: replicas}
}

// topicOf builds a topic with n partitions on replicas.
func topicOf(name string, n int32, replicas ...int32) metadata.Topic {
	t := metadata.Topic{Name: name, Partitions: map[int32]metadata.PartitionState{}}
	for p := range n {
		t.Partitions[p] = part(replicas...)
	}
	return t
}

// waitFor waits on c's change notifications until cond holds.
func waitFor(t *testing.T, c *metadata.Cache, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		ch := c.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
