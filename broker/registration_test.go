package broker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/memstore"
)

// registered starts a membership of broker self on store, registered and
// running; the returned func stops it and returns what its run reported.
func registered(t *testing.T, store metadata.Brokers, self metadata.Broker) (*membership, func() error) {
	t.Helper()
	m := newMembership(store, self, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
	reg, err := m.register(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m.reg = reg
	ctx, cancel := context.WithCancel(context.Background())
	var (
		failed error
		wg     sync.WaitGroup
	)
	wg.Go(func() { m.run(ctx, func(err error) { failed = err }) })
	return m, func() error {
		cancel()
		wg.Wait()
		if err := m.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		return failed
	}
}

// waitBroker waits until cache lists id as want (present with that
// record, or absent when want is nil).
func waitBroker(t *testing.T, cache *metadata.Cache, id int32, want *metadata.Broker) {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		ch := cache.Changed()
		got, ok := cache.Broker(id)
		if (want == nil && !ok) || (want != nil && ok && reflect.DeepEqual(got, *want)) {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("broker %d is %+v (listed %v), want %+v", id, got, ok, want)
		}
	}
}

// registeredAgain waits until m registered after revision rev. The old
// record may still be listed meanwhile.
func registeredAgain(t *testing.T, m *membership, watcher metadata.Store, rev int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for m.Revision() <= rev {
		if time.Now().After(deadline) {
			t.Fatalf("registration revision %d after the lease expired, before %d: not registered again", m.Revision(), rev)
		}
		select {
		case <-watcher.Cache().Changed():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestMembershipRegistersAgain: a registration whose lease expired (etcd
// out of reach for longer than its TTL) is replaced by a new one while
// the broker runs on; a controlled shutdown announced before carries over
// to the next registration.
func TestMembershipRegistersAgain(t *testing.T) {
	backend := memstore.NewBackend()
	store, watcher := backend.Open(), backend.Open()
	t.Cleanup(func() { _ = store.Close(); _ = watcher.Close() })
	self := metadata.Broker{ID: 1, Host: "127.0.0.1", Port: 9092, Incarnation: "dir-a"}
	m, stop := registered(t, store, self)
	first := m.Revision()

	backend.ExpireBroker(1)
	registeredAgain(t, m, watcher, first)
	waitBroker(t, watcher.Cache(), 1, &self)
	if metadata.IsClosed(m.Lost()) {
		t.Fatal("Lost closed although the broker registered again")
	}

	if _, err := m.RequestShutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	shutting := self
	shutting.ShuttingDown = true
	waitBroker(t, watcher.Cache(), 1, &shutting)
	second := m.Revision()
	backend.ExpireBroker(1)
	// The gap between the expiry and the new record may be too short for
	// the watcher to see the broker unlisted: wait for the new record.
	registeredAgain(t, m, watcher, second)
	waitBroker(t, watcher.Cache(), 1, &shutting)

	if err := stop(); err != nil {
		t.Fatalf("run reported %v", err)
	}
	waitBroker(t, watcher.Cache(), 1, nil)
}

// heldStore lets a test take the broker's id before the broker registers
// again: while held, RegisterBroker waits for release.
type heldStore struct {
	metadata.Brokers
	mu   sync.Mutex
	gate chan struct{} // nil while not held
}

func (h *heldStore) hold() {
	h.mu.Lock()
	h.gate = make(chan struct{})
	h.mu.Unlock()
}

func (h *heldStore) release() {
	h.mu.Lock()
	close(h.gate)
	h.gate = nil
	h.mu.Unlock()
}

func (h *heldStore) RegisterBroker(ctx context.Context, b metadata.Broker, ttl time.Duration) (metadata.Registration, error) {
	h.mu.Lock()
	gate := h.gate
	h.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return h.Brokers.RegisterBroker(ctx, b, ttl)
}

// TestMembershipGivesUpWhenIDTaken: when another live process (another
// incarnation) holds the broker's id after its lease expired, the broker
// waits the grace of a crashed predecessor's lease, then gives up: Lost
// closes and run reports errIDTaken, which stops the broker.
func TestMembershipGivesUpWhenIDTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := memstore.NewBackend()
		store, other := backend.Open(), backend.Open()
		defer func() { _ = store.Close(); _ = other.Close() }()
		self := metadata.Broker{ID: 1, Host: "127.0.0.1", Port: 9092, Incarnation: "dir-a"}
		held := &heldStore{Brokers: store}
		m, stop := registered(t, held, self)

		held.hold()
		backend.ExpireBroker(1)
		impostor := self
		impostor.Incarnation = "dir-b"
		if _, err := other.RegisterBroker(t.Context(), impostor, time.Second); err != nil {
			t.Fatal(err)
		}
		held.release()
		select {
		case <-m.Lost():
		case <-time.After(time.Minute):
			t.Fatal("Lost not closed")
		}
		if err := stop(); !errors.Is(err, errIDTaken) {
			t.Fatalf("run reported %v, want errIDTaken", err)
		}
		if got, _ := other.Cache().Broker(1); !reflect.DeepEqual(got, impostor) {
			t.Fatalf("broker 1 is %+v, want the other process's %+v", got, impostor)
		}
	})
}
