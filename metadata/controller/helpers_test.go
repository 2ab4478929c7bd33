package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/etcdstore"
	"github.com/strata-broker/strata/metadata/etcdstore/etcdtest"
	"github.com/strata-broker/strata/metadata/memstore"
)

// The few tests that run on real etcd share one embedded server, each
// under its own key prefix; the others run on memstore.
func TestMain(m *testing.M) { etcdtest.Main(m, etcdstore.StartEmbedded) }

var testLogger = etcdtest.Logger

// testTTL is the election session TTL of test controllers.
const testTTL = time.Second

var testCtx = etcdtest.Context

// cluster opens store handles on one metadata backend, as brokers.
type cluster interface {
	open(t *testing.T) metadata.Store
}

// etcdCluster is the test's own prefix on the shared embedded etcd; every
// handle is its own etcd client.
type etcdCluster struct{}

func (etcdCluster) open(t *testing.T) metadata.Store {
	t.Helper()
	s, err := etcdstore.Open(testCtx(t), etcdtest.Endpoints(), etcdtest.Prefix(t), testLogger())
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

// memCluster is an in-memory backend; its fault hooks end leases at once.
type memCluster struct{ *memstore.Backend }

func newMem() memCluster { return memCluster{memstore.NewBackend()} }

func (c memCluster) open(t *testing.T) metadata.Store {
	s := c.Open()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// onBoth runs fn on embedded etcd and on memstore.
func onBoth(t *testing.T, fn func(t *testing.T, cl cluster)) {
	t.Run("etcd", func(t *testing.T) { fn(t, etcdCluster{}) })
	t.Run("mem", func(t *testing.T) { fn(t, newMem()) })
}

// runner is a Controller running in its own goroutine.
type runner struct {
	*Controller
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // Run's result, set before done is closed
}

// start runs a controller for node id on s until the test ends (or stop).
func start(t *testing.T, s Store, id int32, opts Options) *runner {
	t.Helper()
	if opts.SessionTTL == 0 {
		opts.SessionTTL = testTTL
	}
	opts.Log = testLogger()
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{Controller: New(s, id, opts), cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = r.Run(ctx)
		close(r.done)
	}()
	t.Cleanup(func() {
		if err := r.stop(); err != nil && !errors.Is(err, metadata.ErrClosed) {
			t.Errorf("controller %d Run: %v", id, err)
		}
	})
	return r
}

// stop cancels Run and returns its result. Idempotent.
func (r *runner) stop() error {
	r.cancel()
	<-r.done
	return r.err
}

// exited waits for Run to return by itself and returns its result.
func (r *runner) exited(t *testing.T) error {
	t.Helper()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	select {
	case <-r.done:
		return r.err
	case <-timer.C:
		t.Fatal("Run did not return")
		return nil
	}
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
func registerAll(t *testing.T, s metadata.Brokers, racks map[int32]string, ids ...int32) map[int32]metadata.Registration {
	t.Helper()
	regs := make(map[int32]metadata.Registration)
	for _, id := range ids {
		regs[id] = register(t, s, id, racks[id])
	}
	return regs
}

func register(t *testing.T, s metadata.Brokers, id int32, rack string) metadata.Registration {
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
func waitPartition(t *testing.T, s Store, topic string, p int32, what string, cond func(metadata.PartitionState) bool) metadata.PartitionState {
	t.Helper()
	var got metadata.PartitionState
	waitUntil(t, fmt.Sprintf("%s-%d: %s", topic, p, what), func() bool {
		var ok bool
		got, ok = s.Cache().Partition(topic, p)
		return ok && cond(got)
	}, s.Cache().Changed)
	return got
}
