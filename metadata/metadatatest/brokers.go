package metadatatest

import (
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
)

// regTTL is the lease of test registrations: long enough that only the
// hooks end them.
const regTTL = 3 * time.Second

// register registers b on s for regTTL, failing the test on error.
func register(t *testing.T, s metadata.Brokers, b metadata.Broker) metadata.Registration {
	t.Helper()
	reg, err := s.RegisterBroker(testCtx(t), b, regTTL)
	if err != nil {
		t.Fatalf("RegisterBroker: %v", err)
	}
	return reg
}

func testRegisterBrokerAndClose(t *testing.T, cl Cluster) {
	s, watcher := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	b := metadata.Broker{ID: 7, Host: "127.0.0.1", Port: 9092, Rack: "r1", Incarnation: "dir-a", MaxPartitions: 4000,
		Endpoints: []metadata.Endpoint{{Listener: "INTERNAL", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "SSL"}, {Listener: "CLIENT", Host: "example.com", Port: 9093, SecurityProtocol: "PLAINTEXT"}}}
	reg := register(t, s, b)
	if got, ok := s.Cache().Broker(7); !ok || !reflect.DeepEqual(got, b) || s.Cache().Revision() < reg.Revision() {
		t.Fatalf("own cache broker = %+v, %v", got, ok)
	}
	if err := watcher.Cache().WaitRevision(ctx, reg.Revision()); err != nil {
		t.Fatal(err)
	}
	if bs := watcher.Cache().Brokers(); len(bs) != 1 || !reflect.DeepEqual(bs[0], b) {
		t.Fatalf("watcher brokers = %v", bs)
	}
	// A second live registration of id 7 fails clearly.
	_, err := watcher.RegisterBroker(ctx, metadata.Broker{ID: 7, Host: "127.0.0.2", Port: 9092}, regTTL)
	if !errors.Is(err, metadata.ErrBrokerRegistered) {
		t.Fatalf("duplicate registration: %v, want ErrBrokerRegistered", err)
	}
	for _, bad := range []metadata.Broker{
		{ID: 8, Port: 9092},             // no host
		{ID: 8, Host: "h", Port: 0},     // no port
		{ID: 8, Host: "h", Port: 70000}, // port out of range
		{ID: -1, Host: "h", Port: 9092}, // negative id
	} {
		if _, err := s.RegisterBroker(ctx, bad, regTTL); err == nil {
			t.Fatalf("registration of %+v succeeded", bad)
		}
	}
	// Close withdraws at once: no waiting for the ttl.
	if err := reg.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := reg.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	waitFor(t, watcher.Cache(), "broker withdrawn", func() bool { return len(watcher.Cache().Brokers()) == 0 })
	if metadata.IsClosed(reg.Lost()) {
		t.Fatal("Lost closed by a deliberate Close")
	}
	// The id is free again.
	reg2, err := watcher.RegisterBroker(ctx, b, regTTL)
	if err != nil {
		t.Fatalf("re-register: %v", err)
	}
	if reg2.Revision() <= reg.Revision() {
		t.Fatalf("re-registration at revision %d, first at %d", reg2.Revision(), reg.Revision())
	}
}

// testRegistrationExpiry: a broker whose lease is not kept alive (a
// crash) loses its registration and disappears from every cache.
func testRegistrationExpiry(t *testing.T, cl Cluster) {
	s, watcher := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	reg := register(t, s, metadata.Broker{ID: 1, Host: "localhost", Port: 9092})
	other := register(t, s, metadata.Broker{ID: 2, Host: "localhost", Port: 9093})
	if err := watcher.Cache().WaitRevision(ctx, other.Revision()); err != nil {
		t.Fatal(err)
	}
	cl.ExpireRegistration(t, reg)
	WaitClosed(t, reg.Lost(), "Lost after the lease expired")
	waitFor(t, watcher.Cache(), "expired broker gone", func() bool {
		_, ok := watcher.Cache().Broker(1)
		return !ok
	})
	if _, ok := watcher.Cache().Broker(2); !ok || metadata.IsClosed(other.Lost()) {
		t.Fatal("the other registration went too")
	}
	// Closing a lost registration is harmless, and the id is free.
	if err := reg.Close(); err != nil {
		t.Fatalf("Close of a lost registration: %v", err)
	}
	if _, err := watcher.RegisterBroker(ctx, metadata.Broker{ID: 1, Host: "localhost", Port: 9092}, regTTL); err != nil {
		t.Fatalf("re-register after expiry: %v", err)
	}
}

// testRegisterTakesOverOwnIncarnation: a broker restarted on the same log
// directory (same incarnation) replaces its crashed predecessor's
// registration at once; a different incarnation still has to wait.
func testRegisterTakesOverOwnIncarnation(t *testing.T, cl Cluster) {
	crashed, restarted := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	b := metadata.Broker{ID: 3, Host: "127.0.0.1", Port: 9092, Incarnation: "dir-a"}
	old := register(t, crashed, b)
	other := b
	other.Incarnation = "dir-b"
	if _, err := restarted.RegisterBroker(ctx, other, regTTL); !errors.Is(err, metadata.ErrBrokerRegistered) {
		t.Fatalf("other incarnation: %v, want ErrBrokerRegistered", err)
	}
	none := b
	none.Incarnation = ""
	if _, err := restarted.RegisterBroker(ctx, none, regTTL); !errors.Is(err, metadata.ErrBrokerRegistered) {
		t.Fatalf("no incarnation: %v, want ErrBrokerRegistered", err)
	}
	if _, err := restarted.RegisterBroker(ctx, b, regTTL); err != nil {
		t.Fatalf("same incarnation: %v", err)
	}
	WaitClosed(t, old.Lost(), "the predecessor's registration lost")
	if got, ok := restarted.Cache().Broker(3); !ok || !reflect.DeepEqual(got, b) {
		t.Fatalf("broker = %+v, %v", got, ok)
	}
}

// testRequestShutdown: a broker announcing its controlled shutdown keeps
// its registration, now flagged ShuttingDown in every cache; the lease
// still ends it; an ended registration cannot announce anything.
func testRequestShutdown(t *testing.T, cl Cluster) {
	s, watcher := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	b := metadata.Broker{ID: 5, Host: "127.0.0.1", Port: 9092, Rack: "r1", Incarnation: "dir-a", MaxPartitions: 100}
	reg := register(t, s, b)
	rev, err := reg.RequestShutdown(ctx)
	if err != nil {
		t.Fatalf("RequestShutdown: %v", err)
	}
	want := b
	want.ShuttingDown = true
	if got, ok := s.Cache().Broker(5); !ok || !reflect.DeepEqual(got, want) || rev <= reg.Revision() {
		t.Fatalf("own cache broker = %+v, %v at revision %d, want %+v", got, ok, rev, want)
	}
	if err := watcher.Cache().WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if got, ok := watcher.Cache().Broker(5); !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("watcher broker = %+v, %v", got, ok)
	}
	if _, err := reg.RequestShutdown(ctx); err != nil {
		t.Fatalf("second RequestShutdown: %v", err)
	}
	// The rewritten record still lives on the registration's lease.
	cl.ExpireRegistration(t, reg)
	WaitClosed(t, reg.Lost(), "Lost after the lease expired")
	waitFor(t, watcher.Cache(), "shutting-down broker gone", func() bool {
		_, ok := watcher.Cache().Broker(5)
		return !ok
	})
	if _, err := reg.RequestShutdown(ctx); !errors.Is(err, metadata.ErrClosed) {
		t.Fatalf("RequestShutdown of a lost registration: %v, want ErrClosed", err)
	}
	// A new registration starts without the flag; a closed one refuses.
	again, err := watcher.RegisterBroker(ctx, b, regTTL)
	if err != nil {
		t.Fatalf("re-register: %v", err)
	}
	if got, _ := watcher.Cache().Broker(5); got.ShuttingDown {
		t.Fatalf("new registration inherited the flag: %+v", got)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := again.RequestShutdown(ctx); !errors.Is(err, metadata.ErrClosed) {
		t.Fatalf("RequestShutdown of a closed registration: %v, want ErrClosed", err)
	}
}

// testStoreCloseWithdraws: closing a handle (a broker stopping) withdraws
// its registrations at once and ends its controller term.
func testStoreCloseWithdraws(t *testing.T, cl Cluster) {
	s, watcher := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	reg := register(t, s, metadata.Broker{ID: 4, Host: "localhost", Port: 9092})
	term, err := s.Campaign(ctx, 4, regTTL)
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	if err := watcher.Cache().WaitRevision(ctx, term.Revision()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitFor(t, watcher.Cache(), "broker withdrawn", func() bool { return len(watcher.Cache().Brokers()) == 0 })
	if metadata.IsClosed(reg.Lost()) {
		t.Fatal("Lost closed by the store's Close")
	}
	WaitClosed(t, term.Done(), "term over after the store closed")
	if !errors.Is(term.Err(), metadata.ErrSessionLost) {
		t.Fatalf("term.Err = %v, want ErrSessionLost", term.Err())
	}
	if _, err := term.CompareAndSetPartition(ctx, "t", 0, 0, Part(1)); !errors.Is(err, metadata.ErrFenced) {
		t.Fatalf("write of an ended term: %v, want ErrFenced", err)
	}
}

// testProducerIDBlocksAreUnique: two handles (two brokers) allocating
// concurrently get disjoint blocks, contiguous from 0.
func testProducerIDBlocksAreUnique(t *testing.T, cl Cluster) {
	stores := []metadata.Store{cl.Open(t), cl.Open(t)}
	ctx := testCtx(t)
	const perStore, block = 10, 5
	var (
		mu     sync.Mutex
		firsts []int64
		wg     sync.WaitGroup
	)
	for _, s := range stores {
		for range 2 {
			wg.Go(func() {
				for range perStore / 2 {
					first, err := s.AllocateProducerIDs(ctx, block)
					if err != nil {
						t.Errorf("AllocateProducerIDs: %v", err)
						return
					}
					mu.Lock()
					firsts = append(firsts, first)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	slices.Sort(firsts)
	if len(firsts) != len(stores)*perStore {
		t.Fatalf("%d blocks, want %d", len(firsts), len(stores)*perStore)
	}
	for i, f := range firsts {
		if f != int64(i)*block {
			t.Fatalf("blocks %v are not the contiguous disjoint sequence 0,%d,…", firsts, block)
		}
	}
	for _, n := range []int64{0, -1} {
		if _, err := stores[0].AllocateProducerIDs(ctx, n); err == nil {
			t.Fatalf("n=%d accepted", n)
		}
	}
}
