package local

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/strata-broker/strata/tier/producer"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// txnBatch builds a transactional batch of n records of producer pid.
func txnBatch(pid int64, epoch int16, seq int32, n int) record.Batch {
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Value: fmt.Appendf(nil, "t%d-%d-%d", pid, seq, i)}
	}
	return record.NewBatch(record.BuildOptions{Idempotent: true, Transactional: true,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, recs...)
}

// produceTxn appends a transactional batch as leader and returns its
// first offset.
func produceTxn(t *testing.T, l *Log, pid int64, seq int32, n int) int64 {
	t.Helper()
	res, err := l.AppendAsLeader([]record.Batch{txnBatch(pid, 0, seq, n)}, AppendOptions{LeaderEpoch: 3})
	if err != nil {
		t.Fatalf("produce transactional pid %d seq %d: %v", pid, seq, err)
	}
	return res.FirstOffset
}

// endTxn appends a marker as leader and returns its offset.
func endTxn(t *testing.T, l *Log, pid int64, commit bool) int64 {
	t.Helper()
	off, err := l.AppendMarker(TxnMarker{ProducerID: pid, CoordinatorEpoch: 1, Commit: commit}, 3)
	if err != nil {
		t.Fatalf("marker pid %d commit %v: %v", pid, commit, err)
	}
	return off
}

// allAborted is every transaction index entry of the log, oldest first.
func allAborted(l *Log) []segment.AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []segment.AbortedTxn
	for _, s := range l.segs {
		out = append(out, s.TxnIndex().All()...)
	}
	return out
}

func TestTxnMarkersLSOAndIndex(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{})
	if _, ok := l.FirstUnstableOffset(); ok {
		t.Fatal("unstable offset in an empty log")
	}
	appendN(t, l, 1, 0)            // offset 0, not transactional
	a := produceTxn(t, l, 1, 0, 2) // pid 1 from 1
	b := produceTxn(t, l, 2, 0, 1) // pid 2 from 3
	if got := l.LastStableOffset(l.LogEndOffset()); got != a {
		t.Fatalf("LSO %d with two open transactions, want %d", got, a)
	}
	// A non-transactional batch of a producer inside a transaction.
	if _, err := l.AppendAsLeader([]record.Batch{idem(2, 0, 1, 1)}, AppendOptions{}); !errors.Is(err, producer.ErrInvalidTxnState) {
		t.Fatalf("plain batch inside a transaction: %v", err)
	}
	commit := endTxn(t, l, 1, true)
	if got := l.LastStableOffset(commit); got != a {
		t.Fatalf("LSO %d before the high watermark passed the commit, want %d", got, a)
	}
	l.OnHighWatermarkUpdated(commit + 1)
	if got := l.LastStableOffset(commit + 1); got != b {
		t.Fatalf("LSO %d after the commit is replicated, want %d", got, b)
	}
	abort := endTxn(t, l, 2, false)
	want := []segment.AbortedTxn{{ProducerID: 2, FirstOffset: b, LastOffset: abort, LastStableOffset: abort + 1}}
	if got := allAborted(l); !slices.Equal(got, want) {
		t.Fatalf("aborted entries %+v, want %+v", got, want)
	}
	if got := l.LastStableOffset(abort); got != b {
		t.Fatalf("LSO %d with the abort above the high watermark, want %d", got, b)
	}
	leo := l.LogEndOffset()
	l.OnHighWatermarkUpdated(leo)
	if got := l.LastStableOffset(leo); got != leo {
		t.Fatalf("LSO %d with every transaction replicated, want %d", got, leo)
	}
	if off, ok := l.FirstUnstableOffset(); ok {
		t.Fatalf("first unstable offset %d after every marker", off)
	}
	if r := l.CollectAbortedTxns(0, leo); !slices.Equal(r.Aborted, want) || !r.Complete {
		t.Fatalf("collected %+v", r)
	}
	if r := l.CollectAbortedTxns(abort+1, leo); len(r.Aborted) != 0 {
		t.Fatalf("collected past the abort: %+v", r)
	}
	// An empty transaction's marker indexes nothing; fenced markers append
	// nothing.
	endTxn(t, l, 2, false)
	if _, err := l.AppendMarker(TxnMarker{ProducerID: 2, CoordinatorEpoch: 0}, 3); !errors.Is(err, producer.ErrTransactionCoordinatorFenced) {
		t.Fatalf("marker of an older coordinator: %v", err)
	}
	if _, err := l.AppendMarker(TxnMarker{ProducerID: 2, ProducerEpoch: -1, CoordinatorEpoch: 1}, 3); !errors.Is(err, producer.ErrInvalidProducerEpoch) {
		t.Fatalf("marker of an older producer epoch: %v", err)
	}
	if got := allAborted(l); !slices.Equal(got, want) || l.LogEndOffset() != leo+1 {
		t.Fatalf("after the empty and fenced markers: entries %+v, LEO %d", got, l.LogEndOffset())
	}

	// A follower copying the leader's batches gets the same state.
	f := openLog(t, t.TempDir(), Config{})
	if err := f.AppendAsFollower(readAllBatches(t, l)); err != nil {
		t.Fatal(err)
	}
	if got := allAborted(f); !slices.Equal(got, want) {
		t.Fatalf("follower's aborted entries %+v, want %+v", got, want)
	}
	if got := f.LastStableOffset(abort); got != b {
		t.Fatalf("follower's LSO %d, want %d", got, b)
	}
}

// abortSome writes, across several segments, transactions of producer 1
// that commit and of producer 2 that abort, leaving producer 3's open
// from the last round on, and ending with an abort marker (so in the
// active segment). It returns the open transaction's first offset.
func abortSome(t *testing.T, l *Log, rounds int) (open int64) {
	t.Helper()
	for i := range rounds {
		produceTxn(t, l, 1, int32(2*i), 2)
		produceTxn(t, l, 2, int32(2*i), 2)
		appendN(t, l, 2, 0)
		if i == rounds-1 {
			open = produceTxn(t, l, 3, 0, 1)
		}
		endTxn(t, l, 1, true)
		endTxn(t, l, 2, false)
	}
	return open
}

func TestTxnIndexPerSegmentRollRetention(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 1024}
	l := openLog(t, dir, cfg)
	open := abortSome(t, l, 12)
	segs := l.Segments()
	if len(segs) < 3 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	n := 0
	for _, s := range segs {
		l.mu.RLock()
		entries := s.seg.TxnIndex().All()
		l.mu.RUnlock()
		for _, a := range entries {
			if a.LastOffset < s.BaseOffset || a.LastOffset >= s.NextOffset {
				t.Fatalf("segment [%d, %d) indexes the marker at %d", s.BaseOffset, s.NextOffset, a.LastOffset)
			}
		}
		if n += len(entries); len(entries) > 0 {
			if st, err := os.Stat(s.TxnIndexPath); err != nil || st.Size() != int64(len(entries)*segment.AbortedTxnSize) {
				t.Fatalf("index file of segment %d: %v %v", s.BaseOffset, st, err)
			}
		}
	}
	if n != 12 {
		t.Fatalf("%d aborted entries, want 12", n)
	}
	l.OnHighWatermarkUpdated(l.LogEndOffset())
	if off, ok := l.FirstUnstableOffset(); !ok || off != open {
		t.Fatalf("first unstable offset %d %v, want %d", off, ok, open)
	}
	// Retention removes the index files of the segments it deletes.
	if err := l.DeleteRecordsBefore(segs[2].BaseOffset); err != nil {
		t.Fatal(err)
	}
	for _, s := range segs[:2] {
		if _, err := os.Stat(s.TxnIndexPath); !os.IsNotExist(err) {
			t.Fatalf("index of deleted segment %d: %v", s.BaseOffset, err)
		}
	}
	if err := l.TruncateFullyAndStartAt(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		if _, err := os.Stat(s.TxnIndexPath); !os.IsNotExist(err) {
			t.Fatalf("index of segment %d after full truncation: %v", s.BaseOffset, err)
		}
	}
	if _, ok := l.FirstUnstableOffset(); ok || len(allAborted(l)) != 0 {
		t.Fatal("transactions survived full truncation")
	}
}

func TestTxnTruncateDropsEntries(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{SegmentBytes: 1024})
	abortSome(t, l, 8)
	all := allAborted(l)
	cut := all[5]
	// Truncating at the sixth abort marker reopens its transaction.
	if err := l.TruncateTo(cut.LastOffset); err != nil {
		t.Fatal(err)
	}
	if got := allAborted(l); !slices.Equal(got, all[:5]) {
		t.Fatalf("entries after truncation %+v, want %+v", got, all[:5])
	}
	if first, ok := l.producers.OngoingTxn(2); !ok || first != cut.FirstOffset {
		t.Fatalf("producer 2's transaction after truncation: %d %v, want %d", first, ok, cut.FirstOffset)
	}
	if got := l.LastStableOffset(l.LogEndOffset()); got != cut.FirstOffset {
		t.Fatalf("LSO %d after truncation, want %d", got, cut.FirstOffset)
	}
	// The log goes on: the transaction aborts again at the new end.
	abort := endTxn(t, l, 2, false)
	if got := allAborted(l); len(got) != 6 || got[5].LastOffset != abort || got[5].FirstOffset != cut.FirstOffset {
		t.Fatalf("entries after aborting again %+v", got)
	}
}

func TestTxnRecoveryRebuildsIndex(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 1024}
	l := openLog(t, dir, cfg)
	open := abortSome(t, l, 10)
	want := allAborted(l)
	segs := l.Segments()
	last := segs[len(segs)-1]
	if len(last.seg.TxnIndex().All()) == 0 {
		t.Fatal("the active segment holds no abort; the test needs one")
	}
	l.closeUnclean()
	// kill -9, and the active segment's index holds a wrong entry: the
	// rescanned segments' indexes are rebuilt from their markers.
	bogus := segment.NewTxnIndex(last.TxnIndexPath+".bogus", last.BaseOffset)
	if err := bogus.Append(segment.AbortedTxn{ProducerID: 99, FirstOffset: last.BaseOffset, LastOffset: last.BaseOffset, LastStableOffset: last.BaseOffset}); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(last.TxnIndexPath+".bogus", last.TxnIndexPath); err != nil {
		t.Fatal(err)
	}
	re := openLog(t, dir, cfg)
	if got := allAborted(re); !slices.Equal(got, want) {
		t.Fatalf("entries after recovery\n%+v\nwant\n%+v", got, want)
	}
	re.OnHighWatermarkUpdated(re.LogEndOffset())
	if off, ok := re.FirstUnstableOffset(); !ok || off != open {
		t.Fatalf("first unstable offset after recovery %d %v, want %d", off, ok, open)
	}
	if got := re.LastStableOffset(re.LogEndOffset()); got != open {
		t.Fatalf("LSO after recovery %d, want %d", got, open)
	}
	// A clean restart keeps the indexes and the state.
	if err := re.Close(); err != nil {
		t.Fatal(err)
	}
	re = openLog(t, dir, cfg)
	if got := allAborted(re); !slices.Equal(got, want) {
		t.Fatalf("entries after a clean restart %+v", got)
	}
	re.OnHighWatermarkUpdated(re.LogEndOffset())
	if off, ok := re.FirstUnstableOffset(); !ok || off != open {
		t.Fatalf("first unstable offset after a clean restart %d %v, want %d", off, ok, open)
	}
}

func TestTxnIndexKeptThroughReplace(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Config{SegmentBytes: 1024})
	abortSome(t, l, 8)
	want := allAborted(l)
	segs := l.Segments()
	cleaned, _ := cleanGroupKeeping(t, l, segs[:2], func(int, bool) bool { return true })
	if err := l.ReplaceSegments(segs[:2], cleaned); err != nil {
		t.Fatal(err)
	}
	if got := allAborted(l); !slices.Equal(got, want) {
		t.Fatalf("entries after the swap %+v, want %+v", got, want)
	}
	if p := l.Segments()[0].TxnIndexPath; p != segment.FileName(dir, segs[0].BaseOffset, segment.TxnIndexSuffix) {
		t.Fatalf("cleaned segment's index at %s", p)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	re := openLog(t, dir, Config{SegmentBytes: 1024})
	if got := allAborted(re); !slices.Equal(got, want) {
		t.Fatalf("entries after reopening %+v", got)
	}
}
