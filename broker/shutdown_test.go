package broker

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-broker/strata/internal/logbuf"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/controller"
	"github.com/strata-broker/strata/metadata/memstore"
)

// TestControlledShutdownWaitsForController: the stopping broker writes
// nothing itself; it flags its registration, the controller (here on
// another broker) moves its leaderships to live ISR members and takes it
// out of the ISRs it follows, and the shutdown returns as soon as the
// cache shows no leadership left to move — well before the timeout. A
// partition it leads alone stays with it.
func TestControlledShutdownWaitsForController(t *testing.T) {
	backend := memstore.NewBackend()
	ctlStore, brokers := backend.Open(), backend.Open()
	t.Cleanup(func() { _ = ctlStore.Close(); _ = brokers.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	regs := map[int32]metadata.Registration{}
	for id := int32(1); id <= 3; id++ {
		reg, err := brokers.RegisterBroker(ctx, metadata.Broker{ID: id, Host: "127.0.0.1", Port: 9000 + id}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		regs[id] = reg
	}
	r := []int32{1, 2, 3}
	if _, err := brokers.CreateTopic(ctx, metadata.Topic{Name: "t", Partitions: map[int32]metadata.PartitionState{
		0: {Replicas: r, Leader: 1, ISR: []int32{1, 3, 2}},
		1: {Replicas: r, Leader: 1, ISR: []int32{1}},
		2: {Replicas: []int32{2, 1, 3}, Leader: 2, ISR: r},
	}}); err != nil {
		t.Fatal(err)
	}
	c := controller.New(ctlStore, 3, controller.Options{Log: slog.New(slog.DiscardHandler)})
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	for !c.IsLeader() {
		select {
		case <-c.Changed():
		case <-ctx.Done():
			t.Fatal("controller not elected")
		}
	}

	var logged logbuf.Buffer
	start := time.Now()
	controlledShutdown(regs[1], brokers.Cache(), 1, slog.New(slog.NewTextHandler(&logged, nil)))
	if took := time.Since(start); took >= ControlledShutdownTimeout {
		t.Fatalf("controlled shutdown took %v: it timed out", took)
	}
	cache := brokers.Cache()
	if b, _ := cache.Broker(1); !b.ShuttingDown {
		t.Fatalf("broker 1 not flagged: %+v", b)
	}
	if p0, _ := cache.Partition("t", 0); p0.Leader != 2 || !slices.Equal(p0.ISR, []int32{3, 2}) {
		t.Fatalf("p0 = %+v, want leader 2 (replica order) isr [3 2]", p0)
	}
	if p1, _ := cache.Partition("t", 1); p1.Leader != 1 || p1.PartitionEpoch != 0 {
		t.Fatalf("p1, led by 1 alone, changed: %+v", p1)
	}
	if !strings.Contains(logged.String(), "controlled shutdown: leadership moved") {
		t.Fatalf("the move was not logged:\n%s", logged.String())
	}
	// The ISR of a partition it follows loses it too (the controller's
	// pass may still be writing it).
	deadline := time.Now().Add(10 * time.Second)
	for {
		changed := cache.Changed()
		if p2, _ := cache.Partition("t", 2); !slices.Contains(p2.ISR, 1) {
			break
		}
		select {
		case <-changed:
		case <-time.After(time.Until(deadline)):
			t.Fatal("broker 1 still in the ISR of t-2")
		}
	}
}
