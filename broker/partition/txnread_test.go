package partition

import (
	"errors"
	"slices"
	"testing"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// txnRecords is a transactional batch of n records of producer pid at
// base offset base (used only by followers' appends).
func txnRecords(pid int64, base int64, n int) record.Batch {
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Value: []byte("t"), OffsetDelta: int32(i)}
	}
	return record.NewBatch(record.BuildOptions{BaseOffset: base, Idempotent: true, Transactional: true, ProducerID: pid}, recs...)
}

// TestLeaderLastStableOffset: a leader's LSO stops at an open transaction,
// and at its abort until the marker is below the high watermark;
// ReadCommitted reads whole batches below it, and AbortedTxns finds the
// aborted transaction in the ranges that overlap it.
func TestLeaderLastStableOffset(t *testing.T) {
	p := onePartition(t, metadata.PartitionState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}, LeaderEpoch: 1})
	if _, err := p.Append(oneBatch(), 1); err != nil { // offset 0
		t.Fatal(err)
	}
	if got := p.LastStableOffset(); got != 1 {
		t.Fatalf("LSO %d without transactions, want the high watermark 1", got)
	}
	if _, err := p.Append([]record.Batch{txnRecords(7, 0, 2)}, 1); err != nil { // 1-2
		t.Fatal(err)
	}
	if hw, lso := p.HighWatermark(), p.LastStableOffset(); hw != 3 || lso != 1 {
		t.Fatalf("high watermark %d, LSO %d with a transaction open from 1, want 3 and 1", hw, lso)
	}
	all, err := p.Read(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer all.Release()
	committed, err := p.ReadCommitted(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer committed.Release()
	if want := int64(len(oneBatch()[0])); committed.Len != want || all.Len <= want {
		t.Fatalf("read_committed read %d bytes, read_uncommitted %d; want %d (the batch below the LSO) and more", committed.Len, all.Len, want)
	}
	if s, err := p.ReadCommitted(1, 1<<20); err != nil || s.Len != 0 {
		t.Fatalf("read_committed at the LSO: %d bytes, %v; want nothing", s.Len, err)
	}
	if _, err := p.ReadCommitted(4, 1<<20); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read_committed past the high watermark: %v", err)
	}

	if _, err := p.Log().AppendMarker(local.TxnMarker{ProducerID: 7, CoordinatorEpoch: 1}, 1); err != nil { // abort at 3
		t.Fatal(err)
	}
	if got := p.LastStableOffset(); got != 1 {
		t.Fatalf("LSO %d with the abort not yet below the high watermark, want 1", got)
	}
	if _, err := p.Append(oneBatch(), 1); err != nil { // 4; the high watermark passes the marker
		t.Fatal(err)
	}
	if got := p.LastStableOffset(); got != 5 {
		t.Fatalf("LSO %d after the abort is replicated, want 5", got)
	}
	want := []segment.AbortedTxn{{ProducerID: 7, FirstOffset: 1, LastOffset: 3, LastStableOffset: 4}}
	if got := p.AbortedTxns(0, 5).Aborted; !slices.Equal(got, want) {
		t.Fatalf("aborted in [0, 5): %+v, want %+v", got, want)
	}
	if got := p.AbortedTxns(4, 5).Aborted; len(got) != 0 {
		t.Fatalf("aborted in [4, 5): %+v, want none", got)
	}
}

// TestFollowerLastStableOffset: a follower's LSO follows its own high
// watermark, the one the leader last sent.
func TestFollowerLastStableOffset(t *testing.T) {
	p := onePartition(t, followerState(1))
	abort, err := record.BuildEndTxnMarker(record.BuildOptions{BaseOffset: 3, ProducerID: 7}, record.EndTxnMarker{CoordinatorEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	plain := record.NewBatch(record.BuildOptions{}, record.Record{Value: []byte("v")})
	data := slices.Concat([]byte(plain), []byte(txnRecords(7, 1, 2)), []byte(abort))
	if err := p.AppendFollower(1, data); err != nil {
		t.Fatal(err)
	}
	if err := p.SetFollowerHighWatermark(1, 3); err != nil {
		t.Fatal(err)
	}
	if got := p.LastStableOffset(); got != 1 {
		t.Fatalf("follower's LSO %d at high watermark 3, want 1 (the abort is at 3)", got)
	}
	if err := p.SetFollowerHighWatermark(1, 4); err != nil {
		t.Fatal(err)
	}
	if got := p.LastStableOffset(); got != 4 {
		t.Fatalf("follower's LSO %d at high watermark 4, want 4", got)
	}
	if got := p.AbortedTxns(0, 4).Aborted; len(got) != 1 || got[0].ProducerID != 7 || got[0].FirstOffset != 1 {
		t.Fatalf("follower's aborted transactions in [0, 4): %+v, want producer 7 from 1", got)
	}
}
