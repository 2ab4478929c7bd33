package memstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/metadatatest"
)

// TestConformance runs the metadata conformance suite on a fresh backend
// per subtest.
func TestConformance(t *testing.T) {
	metadatatest.Run(t, func(t *testing.T) metadatatest.Cluster { return memCluster{NewBackend()} })
}

type memCluster struct{ b *Backend }

func (c memCluster) Open(t *testing.T) metadata.Store {
	s := c.b.Open()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func (c memCluster) ExpireRegistration(t *testing.T, reg metadata.Registration) {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	c.b.endRegistration(reg.(*registration), true)
}

func (c memCluster) ExpireSession(t *testing.T, tm metadata.Term) {
	c.b.mu.Lock()
	defer c.b.mu.Unlock()
	c.b.endCandidate(tm.(*term).c, errSessionExpired)
}

// TestFaultHooks: the exported hooks expire by broker id, elected or
// waiting, and report whether there was anything to expire.
func TestFaultHooks(t *testing.T) {
	b := NewBackend()
	a, o := b.Open(), b.Open()
	defer a.Close()
	defer o.Close()
	ctx := t.Context()
	reg, err := a.RegisterBroker(ctx, metadata.Broker{ID: 1, Host: "h", Port: 1}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !b.ExpireBroker(1) || b.ExpireBroker(1) || b.ExpireBroker(2) {
		t.Fatal("ExpireBroker reported wrongly")
	}
	if !metadata.IsClosed(reg.Lost()) {
		t.Fatal("Lost not closed")
	}
	if _, ok := o.Cache().Broker(1); ok {
		t.Fatal("expired broker still cached")
	}

	t1, err := a.Campaign(ctx, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	rev := b.Revision()
	waiting := make(chan error, 1)
	go func() {
		_, err := o.Campaign(ctx, 2, time.Second)
		waiting <- err
	}()
	// The candidacy's campaign key is a write: wait for it, then expire
	// the candidate while it waits in line.
	if err := a.Cache().WaitRevision(ctx, rev+1); err != nil {
		t.Fatal(err)
	}
	if !b.ExpireControllerSession(2) {
		t.Fatal("no candidacy of 2")
	}
	if err := <-waiting; !errors.Is(err, metadata.ErrSessionLost) {
		t.Fatalf("expired candidate's Campaign = %v, want ErrSessionLost", err)
	}
	if metadata.IsClosed(t1.Done()) {
		t.Fatal("the elected term ended with another candidacy")
	}
	if !b.ExpireControllerSession(1) || b.ExpireControllerSession(1) {
		t.Fatal("ExpireControllerSession reported wrongly")
	}
	if !errors.Is(t1.Err(), metadata.ErrSessionLost) {
		t.Fatalf("Err = %v", t1.Err())
	}
}

// TestManyGoroutines: handles used from many goroutines at once (as
// in-process brokers and a controller would) stay consistent: every
// compare-and-set chain advances the epoch exactly once per success.
func TestManyGoroutines(t *testing.T) {
	b := NewBackend()
	ctx := context.Background()
	s := b.Open()
	defer s.Close()
	tp := metadata.Topic{Name: "t", Partitions: map[int32]metadata.PartitionState{}}
	for p := range int32(4) {
		tp.Partitions[p] = metadata.PartitionState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}}
	}
	if _, err := s.CreateTopic(ctx, tp); err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 8, 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := map[int32]int32{}
	for w := range int32(workers) {
		h := b.Open()
		defer h.Close()
		wg.Go(func() {
			p := w % 4
			for range rounds {
				cur, _ := h.Cache().Partition("t", p)
				next := cur.Clone()
				next.PartitionEpoch++
				if _, err := h.CompareAndSetPartition(ctx, "t", p, cur.PartitionEpoch, next); err == nil {
					mu.Lock()
					wins[p]++
					mu.Unlock()
				} else if !errors.Is(err, metadata.ErrStaleEpoch) {
					t.Error(err)
				}
				_, _ = h.AllocateProducerIDs(ctx, 1)
				_ = h.Cache().Topics()
			}
		})
	}
	wg.Wait()
	for p := range int32(4) {
		if got, _ := s.Cache().Partition("t", p); got.PartitionEpoch != wins[p] {
			t.Fatalf("partition %d at epoch %d after %d successful writes", p, got.PartitionEpoch, wins[p])
		}
	}
	if first, _ := s.AllocateProducerIDs(ctx, 1); first != workers*rounds {
		t.Fatalf("next producer id %d, want %d", first, workers*rounds)
	}
}
