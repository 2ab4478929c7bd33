package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/etcdstore"
)

// shared is one embedded etcd for the package's tests; each test works
// under its own key prefix.
var shared *etcdstore.Embedded

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "controller-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared, err = etcdstore.StartEmbedded(dir, testLogger())
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

// testTTL is the election session TTL of test controllers.
const testTTL = time.Second

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var (
	prefixes sync.Map // *testing.T → string
	seq      atomic.Int64
)

// openStore opens a store (its own etcd client) under the test's prefix.
func openStore(t *testing.T) *etcdstore.Store {
	t.Helper()
	fresh := fmt.Sprintf("/test/%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), seq.Add(1))
	p, _ := prefixes.LoadOrStore(t, fresh)
	s, err := etcdstore.Open(testCtx(t), shared.Endpoints(), p.(string), testLogger())
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

// runner is a Controller running in its own goroutine.
type runner struct {
	*Controller
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// start runs a controller for node id on s until the test ends (or stop).
func start(t *testing.T, s *etcdstore.Store, id int32, opts Options) *runner {
	t.Helper()
	if opts.SessionTTL == 0 {
		opts.SessionTTL = testTTL
	}
	opts.Log = testLogger()
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{Controller: New(s, id, opts), cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- r.Run(ctx) }()
	t.Cleanup(func() {
		if err := r.stop(); err != nil && !errors.Is(err, metadata.ErrClosed) {
			t.Errorf("controller %d Run: %v", id, err)
		}
	})
	return r
}

// stop cancels Run and returns its result. Idempotent.
func (r *runner) stop() error {
	r.once.Do(func() {
		r.cancel()
		r.err = <-r.done
	})
	return r.err
}

// waitUntil waits until cond holds, re-checking whenever a channel from
// one of wakers closes (each waker is asked for a fresh channel before
// every check).
func waitUntil(t *testing.T, what string, cond func() bool, wakers ...func() <-chan struct{}) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		cases := make([]reflect.SelectCase, 0, len(wakers)+1)
		for _, w := range wakers {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w())})
		}
		if cond() {
			return
		}
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deadline.C)})
		if i, _, _ := reflect.Select(cases); i == len(cases)-1 {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// leaders returns the controllers that believe they lead.
func leaders(rs ...*runner) []*runner {
	var out []*runner
	for _, r := range rs {
		if r.IsLeader() {
			out = append(out, r)
		}
	}
	return out
}

// wakersOf gives the Changed channels of the runners.
func wakersOf(rs ...*runner) []func() <-chan struct{} {
	out := make([]func() <-chan struct{}, len(rs))
	for i, r := range rs {
		out[i] = r.Changed
	}
	return out
}

// registerAll registers brokers ids on s with a short lease and returns
// the registrations by id.
func registerAll(t *testing.T, s *etcdstore.Store, racks map[int32]string, ids ...int32) map[int32]metadata.Registration {
	t.Helper()
	regs := make(map[int32]metadata.Registration)
	for _, id := range ids {
		regs[id] = register(t, s, id, racks[id])
	}
	return regs
}

func register(t *testing.T, s *etcdstore.Store, id int32, rack string) metadata.Registration {
	t.Helper()
	reg, err := s.RegisterBroker(testCtx(t), metadata.Broker{ID: id, Host: "127.0.0.1", Port: 9000 + id, Rack: rack}, 2*time.Second)
	if err != nil {
		t.Fatalf("register broker %d: %v", id, err)
	}
	return reg
}

// state builds a partition state.
func state(leader int32, replicas, isr []int32) metadata.PartitionState {
	return metadata.PartitionState{Replicas: replicas, Leader: leader, ISR: isr}
}

// waitPartition waits until the partition as seen by s satisfies cond.
func waitPartition(t *testing.T, s *etcdstore.Store, topic string, p int32, what string, cond func(metadata.PartitionState) bool) metadata.PartitionState {
	t.Helper()
	var got metadata.PartitionState
	waitUntil(t, fmt.Sprintf("%s-%d: %s", topic, p, what), func() bool {
		var ok bool
		got, ok = s.Cache().Partition(topic, p)
		return ok && cond(got)
	}, s.Cache().Changed)
	return got
}
