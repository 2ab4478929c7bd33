package partition

import (
	"bytes"
	"errors"
	"testing"
	"time"

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

// TestLowWatermark: the low watermark is the smallest log start of the
// leader and its live followers, a follower that has not reported one
// counting as -1; a follower's log start moving up wakes waiters, the
// same one again does not; a follower has none.
func TestLowWatermark(t *testing.T) {
	p := onePartition(t, metadata.PartitionState{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 2, 3}, LeaderEpoch: 1})
	for range 3 {
		if _, err := p.AppendAsLeader(1, oneBatch(), 1); err != nil {
			t.Fatal(err)
		}
	}
	all := func(int32) bool { return true }
	if low, ok := p.LowWatermark(all); !ok || low != -1 {
		t.Fatalf("low watermark before the followers fetched: %d, %v; want -1", low, ok)
	}
	now := time.Now()
	p.UpdateFollower(2, 3, 0, now)
	p.UpdateFollower(3, 3, 1, now)
	if until, err := p.DeleteRecords(1, 2); err != nil || until != 2 || p.LogStartOffset() != 2 {
		t.Fatalf("delete records: until %d, log start %d, %v", until, p.LogStartOffset(), err)
	}
	if low, _ := p.LowWatermark(all); low != 0 {
		t.Fatalf("low watermark %d, want 0 (follower 2)", low)
	}
	if low, _ := p.LowWatermark(func(id int32) bool { return id != 2 }); low != 1 {
		t.Fatalf("low watermark with broker 2 gone: %d, want 1", low)
	}

	wake := make(chan struct{}, 1)
	p.Wait(wake)
	p.UpdateFollower(2, 3, 2, now)
	select {
	case <-wake:
	default:
		t.Fatal("a follower's log start moving up woke no waiter")
	}
	p.Wait(wake)
	p.UpdateFollower(2, 3, 2, now)
	select {
	case <-wake:
		t.Fatal("a fetch that changed nothing woke a waiter")
	default:
	}
	p.Unwait(wake)
	p.UpdateFollower(3, 3, 2, now)
	if low, _ := p.LowWatermark(all); low != 2 {
		t.Fatalf("low watermark %d, want 2", low)
	}

	p.applyState(followerState(2), now)
	if _, ok := p.LowWatermark(all); ok {
		t.Fatal("a follower has a low watermark")
	}
}

// TestSetFollowerLogStart: a follower takes the leader's log start up to
// its high watermark, never back, and not under an old leader epoch.
func TestSetFollowerLogStart(t *testing.T) {
	p := onePartition(t, followerState(1))
	var data []byte
	for off := range int64(4) {
		data = append(data, record.NewBatch(record.BuildOptions{BaseOffset: off, PartitionLeaderEpoch: 1}, record.Record{Value: []byte("v")})...)
	}
	if err := p.AppendFollower(1, data); err != nil {
		t.Fatal(err)
	}
	if err := p.SetFollowerHighWatermark(1, 3); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		leaderStart, want int64
	}{
		{1, 1},
		{0, 1}, // never back
		{4, 3}, // capped at the high watermark
	} {
		if err := p.SetFollowerLogStart(1, tc.leaderStart); err != nil || p.LogStartOffset() != tc.want {
			t.Fatalf("leader's log start %d: log start %d, %v; want %d", tc.leaderStart, p.LogStartOffset(), err, tc.want)
		}
	}
	p.applyState(followerState(2), time.Now())
	if err := p.SetFollowerLogStart(1, 4); !errors.Is(err, ErrNotLeaderOrFollower) || p.LogStartOffset() != 3 {
		t.Fatalf("log start from an old leader epoch: %d, %v", p.LogStartOffset(), err)
	}
}
