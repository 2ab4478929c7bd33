package group

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/strata-broker/strata/broker/coordlog/coordlogtest"
)

// TestAppendsCarryTheShardEpoch: a shard appends to its __consumer_offsets
// partition (a real one) only while this broker leads it at the epoch the
// shard was elected at. After a leader change the partition refuses the
// write (NOT_COORDINATOR) and the log is unchanged.
func TestAppendsCarryTheShardEpoch(t *testing.T) {
	in := coordlogtest.NewInternal(t, TopicName)
	p := in.Partition()
	apply := in.SetEpoch

	c := New(Config{}, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = c.Close() })
	c.SetPartitionCount(1)
	c.Elect(0, 1, p)
	for deadline := time.Now().Add(10 * time.Second); !c.Loaded(0); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("partition not loaded within 10s")
		}
	}
	req := CommitRequest{Group: "g", Generation: -1, Offsets: []CommitOffset{{TopicPartition{"t", 0}, Offset{Offset: 5, ExpireTimestamp: -1}}}}
	if err := c.CommitOffsets(req)[0]; err != nil {
		t.Fatalf("commit at the shard's epoch: %v", err)
	}
	leo := p.Log().LogEndOffset()

	// The partition moves to epoch 2 (re-elected here) before the
	// coordinator has reloaded: the epoch-1 shard must not write.
	apply(2, 2)
	req.Offsets[0].Offset.Offset = 6
	if err := c.CommitOffsets(req)[0]; !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("commit of the epoch-1 shard on the epoch-2 partition: %v, want ErrNotCoordinator", err)
	}
	if got := p.Log().LogEndOffset(); got != leo {
		t.Fatalf("log end moved from %d to %d", leo, got)
	}
}
