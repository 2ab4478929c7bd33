package txn

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/strata-broker/strata/broker/coordlog/coordlogtest"
	"github.com/strata-broker/strata/broker/producerid"
	"github.com/strata-broker/strata/metadata/memstore"
)

// TestEpochChangeIsNotCoordinator: a shard writes to its
// __transaction_state partition (a real one) only while this broker
// leads it at the coordinator epoch the shard was elected at. After the
// partition moves to a new leader epoch the write is refused
// (NOT_COORDINATOR), the transition is dropped and the log unchanged;
// once the coordinator follows the metadata and reloads at the new epoch
// the id is served again.
func TestEpochChangeIsNotCoordinator(t *testing.T) {
	in := coordlogtest.NewInternal(t, TopicName)
	cache, parts, p := in.Cache, in.Parts, in.Partition()
	apply := in.SetEpoch

	c := New(ConfigFrom(in.Config), producerid.New(memstore.New()), nil, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = c.Close() })
	c.SetPartitionCount(1)
	c.Elect(0, 1, p)
	waitLoaded(t, c)
	pe, err := c.InitProducerID(context.Background(), "tx", 10_000, NoProducerID, NoProducerEpoch)
	if err != nil {
		t.Fatalf("InitProducerId at the shard's epoch: %v", err)
	}
	leo := p.Log().LogEndOffset()

	apply(2, 2) // re-elected here at epoch 2; the epoch-1 shard must not write
	err = c.AddPartitions("tx", pe.ProducerID, pe.ProducerEpoch, []TopicPartition{tpA}, TV2)
	wantErr(t, err, ErrNotCoordinator)
	if got := p.Log().LogEndOffset(); got != leo {
		t.Fatalf("log end moved from %d to %d", leo, got)
	}
	if d, err := c.Describe("tx"); err != nil || d.State != Empty {
		t.Fatalf("after the refused write: %+v %v", d, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx, 1, cache, parts); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(10 * time.Second); c.Led()[0] != 2 || !c.Loaded(0); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not reloaded at epoch 2 within 10s")
		}
	}
	if err := c.AddPartitions("tx", pe.ProducerID, pe.ProducerEpoch, []TopicPartition{tpA}, TV2); err != nil {
		t.Fatalf("AddPartitions at epoch 2: %v", err)
	}
}

// waitLoaded waits, on the real clock, until partition 0 is loaded.
func waitLoaded(t *testing.T, c *Coordinator) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !c.Loaded(0); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("partition not loaded within 10s")
		}
	}
}
