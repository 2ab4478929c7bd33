package etcdstore

import (
	"errors"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
)

func TestRegisterBrokerAndClose(t *testing.T) {
	s, watcher := openStore(t), openStore(t)
	ctx := testCtx(t)
	b := metadata.Broker{ID: 7, Host: "127.0.0.1", Port: 9092, Rack: "r1"}
	reg, err := s.RegisterBroker(ctx, b, 10*time.Second)
	if err != nil {
		t.Fatalf("RegisterBroker: %v", err)
	}
	if got, ok := s.Cache().Broker(7); !ok || got != b {
		t.Fatalf("own cache broker = %+v, %v", got, ok)
	}
	if err := watcher.Cache().WaitRevision(ctx, reg.Revision()); err != nil {
		t.Fatal(err)
	}
	if bs := watcher.Cache().Brokers(); len(bs) != 1 || bs[0] != b {
		t.Fatalf("watcher brokers = %v", bs)
	}
	// A second live registration of id 7 fails clearly.
	_, err = watcher.RegisterBroker(ctx, metadata.Broker{ID: 7, Host: "127.0.0.2", Port: 9092}, 10*time.Second)
	if !errors.Is(err, metadata.ErrBrokerRegistered) {
		t.Fatalf("duplicate registration: %v, want ErrBrokerRegistered", err)
	}
	if _, err := s.RegisterBroker(ctx, metadata.Broker{ID: 8, Port: 9092}, time.Second); err == nil {
		t.Fatal("registration without host succeeded")
	}
	// Close withdraws at once: no waiting for the ttl.
	if err := reg.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := reg.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	waitFor(t, watcher.Cache(), "broker withdrawn", func() bool { return len(watcher.Cache().Brokers()) == 0 })
	select {
	case <-reg.Lost():
		t.Fatal("Lost closed by a deliberate Close")
	default:
	}
	// The id is free again.
	reg2, err := watcher.RegisterBroker(ctx, b, 10*time.Second)
	if err != nil {
		t.Fatalf("re-register: %v", err)
	}
	_ = reg2 // closed by the store's Close in cleanup
}

// TestBrokerLeaseExpiry: a broker that stops keeping its lease alive (a
// crash) disappears from every cache once the ttl ran out.
func TestBrokerLeaseExpiry(t *testing.T) {
	s, watcher := openStore(t), openStore(t)
	ctx := testCtx(t)
	reg, err := s.RegisterBroker(ctx, metadata.Broker{ID: 1, Host: "localhost", Port: 9092}, 2*time.Second)
	if err != nil {
		t.Fatalf("RegisterBroker: %v", err)
	}
	if err := watcher.Cache().WaitRevision(ctx, reg.Revision()); err != nil {
		t.Fatal(err)
	}
	if _, ok := watcher.Cache().Broker(1); !ok {
		t.Fatal("broker not visible")
	}
	// Simulate a crash: stop the keep-alives without revoking.
	r := reg.(*registration)
	start := time.Now()
	r.cancel()
	<-r.done
	select {
	case <-reg.Lost():
	default:
		t.Fatal("Lost not closed after keep-alives stopped")
	}
	waitFor(t, watcher.Cache(), "lease expiry", func() bool {
		_, ok := watcher.Cache().Broker(1)
		return !ok
	})
	t.Logf("broker expired %v after its keep-alives stopped", time.Since(start))
}

// TestRegisterBrokerTakesOverOwnIncarnation: a broker restarted on the same
// log directory (same incarnation) replaces its crashed predecessor's
// registration at once; a different incarnation still has to wait.
func TestRegisterBrokerTakesOverOwnIncarnation(t *testing.T) {
	crashed, restarted := openStore(t), openStore(t)
	ctx := testCtx(t)
	b := metadata.Broker{ID: 3, Host: "127.0.0.1", Port: 9092, Incarnation: "dir-a"}
	old, err := crashed.RegisterBroker(ctx, b, 30*time.Second)
	if err != nil {
		t.Fatalf("RegisterBroker: %v", err)
	}
	other := b
	other.Incarnation = "dir-b"
	if _, err := restarted.RegisterBroker(ctx, other, 30*time.Second); !errors.Is(err, metadata.ErrBrokerRegistered) {
		t.Fatalf("other incarnation: %v, want ErrBrokerRegistered", err)
	}
	if _, err := restarted.RegisterBroker(ctx, b, 30*time.Second); err != nil {
		t.Fatalf("same incarnation: %v", err)
	}
	select {
	case <-old.Lost():
	case <-ctx.Done():
		t.Fatal("the predecessor's registration was not lost")
	}
	if got, ok := restarted.Cache().Broker(3); !ok || got != b {
		t.Fatalf("broker = %+v, %v", got, ok)
	}
}
