package partition

import (
	"bytes"
	"testing"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/record"
)

// TestAppendFollowerTornAndCorrupt: fetched bytes with whole batches are
// appended (CRCs checked once, by the log), a torn tail is left for the
// next fetch, and a batch with a bad CRC is refused without appending
// anything.
func TestAppendFollowerTornAndCorrupt(t *testing.T) {
	p := onePartition(t, metadata.PartitionState{Replicas: []int32{2, 1}, Leader: 2, ISR: []int32{1, 2}, LeaderEpoch: 1})
	if p.IsLeader() {
		t.Fatal("want a follower partition")
	}
	batch := func(off int64) record.Batch {
		return record.NewBatch(record.BuildOptions{BaseOffset: off, PartitionLeaderEpoch: 1}, record.Record{Value: []byte("value")})
	}
	b0, b1, b2 := batch(0), batch(1), batch(2)

	// Two whole batches and the first half of a third.
	data := bytes.Join([][]byte{b0, b1, b2[:len(b2)/2]}, nil)
	if err := p.AppendFollower(1, data); err != nil {
		t.Fatalf("append with a torn tail: %v", err)
	}
	if leo := p.Log().LogEndOffset(); leo != 2 {
		t.Fatalf("log end after torn tail = %d, want 2", leo)
	}

	// The third batch again, whole but with a flipped byte.
	bad := bytes.Clone(b2)
	bad[len(bad)-1] ^= 0xff
	if err := p.AppendFollower(1, bad); err == nil {
		t.Fatal("a batch with a bad CRC was appended")
	}
	if leo := p.Log().LogEndOffset(); leo != 2 {
		t.Fatalf("log end after a corrupt batch = %d, want 2", leo)
	}

	if err := p.AppendFollower(1, b2); err != nil {
		t.Fatalf("append the whole third batch: %v", err)
	}
	if leo := p.Log().LogEndOffset(); leo != 3 {
		t.Fatalf("log end = %d, want 3", leo)
	}
}
