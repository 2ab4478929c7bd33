package partition

import (
	"errors"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/record"
)

// TestPreferredReadReplica: a leader in rack a sends a consumer in rack b
// to the most caught-up alive in-sync follower there that holds the
// offset, and keeps everyone else (no rack, its own rack, a rack with no
// such follower) for itself.
func TestPreferredReadReplica(t *testing.T) {
	p := onePartition(t, metadata.PartitionState{Replicas: []int32{1, 2, 3, 4}, Leader: 1, ISR: []int32{1, 2, 3}, LeaderEpoch: 1})
	if !p.IsLeader() {
		t.Fatal("want a leader partition")
	}
	for range 3 {
		if _, err := p.Append([]record.Batch{record.NewBatch(record.BuildOptions{}, record.Record{Value: []byte("v")})}, 1); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	p.UpdateFollower(2, 2, 0, now)
	p.UpdateFollower(3, 3, 0, now)
	p.UpdateFollower(4, 3, 0, now) // caught up, but not (yet) in the ISR
	racks := map[int32]string{1: "a", 2: "b", 3: "b", 4: "c"}
	alive := func(id int32) (string, bool) { r, ok := racks[id]; return r, ok }
	for _, tc := range []struct {
		rack   string
		offset int64
		want   int32
	}{
		{"", 0, -1},  // no rack: the leader
		{"a", 0, -1}, // the leader's rack
		{"b", 0, 3},  // the most caught up in rack b
		{"b", 3, 3},  // only 3 holds offset 3
		{"c", 0, -1}, // 4 is not in the ISR
		{"d", 0, -1}, // nobody there
	} {
		if got := p.PreferredReadReplica(tc.rack, tc.offset, alive); got != tc.want {
			t.Errorf("rack %q offset %d: preferred %d, want %d", tc.rack, tc.offset, got, tc.want)
		}
	}
	delete(racks, 3) // broker 3 is gone
	if got := p.PreferredReadReplica("b", 0, alive); got != 2 {
		t.Errorf("with broker 3 gone: preferred %d, want 2", got)
	}
	if got := p.PreferredReadReplica("b", 3, alive); got != -1 {
		t.Errorf("with broker 3 gone, offset 3: preferred %d, want -1", got)
	}
}

// TestFollowerConsumerRead: a follower serves consumers up to the high
// watermark the leader sent; an offset between it and the log end reads
// nothing yet, one past the log end is out of range.
func TestFollowerConsumerRead(t *testing.T) {
	p := onePartition(t, metadata.PartitionState{Replicas: []int32{2, 1}, Leader: 2, ISR: []int32{1, 2}, LeaderEpoch: 1})
	if p.IsLeader() {
		t.Fatal("want a follower partition")
	}
	var data []byte
	for off := range int64(3) {
		data = append(data, record.NewBatch(record.BuildOptions{BaseOffset: off, PartitionLeaderEpoch: 1}, record.Record{Value: []byte("v")})...)
	}
	if err := p.AppendFollower(1, data); err != nil {
		t.Fatal(err)
	}
	if err := p.SetFollowerHighWatermark(1, 1); err != nil {
		t.Fatal(err)
	}
	s, err := p.Read(0, 1<<20)
	if err != nil || s.Len != int64(len(data)/3) {
		t.Fatalf("read at 0: %d bytes, %v; want one batch (%d bytes)", s.Len, err, len(data)/3)
	}
	s.Release()
	for _, off := range []int64{1, 2, 3} {
		if s, err := p.Read(off, 1<<20); err != nil || s.Len != 0 {
			t.Errorf("read at %d (high watermark 1, log end 3): %d bytes, %v; want nothing yet", off, s.Len, err)
		}
	}
	if _, err := p.Read(4, 1<<20); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Errorf("read past the log end: %v, want out of range", err)
	}
}
