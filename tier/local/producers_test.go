package local

import (
	"errors"
	"os"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/tier/producer"
	"github.com/strata-broker/strata/tier/record"
)

// produce appends one idempotent batch as leader.
func produce(t *testing.T, l *Log, pid int64, epoch int16, seq int32, n int) AppendResult {
	t.Helper()
	res, err := l.AppendAsLeader([]record.Batch{idem(pid, epoch, seq, n)}, AppendOptions{})
	if err != nil {
		t.Fatalf("produce pid %d seq %d: %v", pid, seq, err)
	}
	return res
}

func TestProducerDedup(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{})
	first := produce(t, l, 11, 0, 0, 3)
	appendN(t, l, 2, 0) // non-idempotent traffic in between
	second := produce(t, l, 11, 0, 3, 2)

	res, err := l.AppendAsLeader([]record.Batch{idem(11, 0, 0, 3)}, AppendOptions{})
	if err != nil || !res.Duplicate || res.FirstOffset != first.FirstOffset || res.LastOffset != first.LastOffset {
		t.Fatalf("retry of the first batch: %+v %v (original %+v)", res, err, first)
	}
	leo := l.LogEndOffset()
	if _, err := l.AppendAsLeader([]record.Batch{idem(11, 0, 9, 1)}, AppendOptions{}); !errors.Is(err, producer.ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	produce(t, l, 11, 1, 0, 1) // bump the epoch
	if _, err := l.AppendAsLeader([]record.Batch{idem(11, 0, 5, 1)}, AppendOptions{}); !errors.Is(err, producer.ErrInvalidProducerEpoch) {
		t.Fatalf("fenced epoch: %v", err)
	}
	if l.LogEndOffset() != leo+1 {
		t.Fatalf("rejected batches were appended: LEO %d", l.LogEndOffset())
	}
	// A rejected batch in a multi-batch append keeps the good ones out too.
	if _, err := l.AppendAsLeader([]record.Batch{idem(12, 0, 0, 1), idem(12, 0, 5, 1)}, AppendOptions{}); !errors.Is(err, producer.ErrOutOfOrderSequence) {
		t.Fatalf("multi-batch gap: %v", err)
	}
	if l.LogEndOffset() != leo+1 {
		t.Fatal("partial multi-batch append")
	}
	res, err = l.AppendAsLeader([]record.Batch{idem(12, 0, 0, 1), idem(12, 0, 1, 2)}, AppendOptions{})
	if err != nil || res.LastOffset-res.FirstOffset != 2 {
		t.Fatalf("multi-batch in sequence: %+v %v", res, err)
	}
	_ = second
}

func TestProducerDedupAcrossRestart(t *testing.T) {
	for _, clean := range []bool{false, true} {
		name := "unclean"
		if clean {
			name = "clean"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{SegmentBytes: 2048}
			l := openLog(t, dir, cfg)
			var results []AppendResult
			for i := range 40 { // several rolls, hence snapshots
				results = append(results, produce(t, l, 7, 2, int32(i*2), 2))
				appendN(t, l, 1, 0)
			}
			if len(l.Segments()) < 3 {
				t.Fatalf("only %d segments", len(l.Segments()))
			}
			if snaps := l.listSnapshots(); len(snaps) > keptSnapshots {
				t.Fatalf("%d snapshots kept", len(snaps))
			}
			leo := l.LogEndOffset()
			if clean {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				l.closeUnclean()
			}
			re := openLog(t, dir, cfg)
			if re.LogEndOffset() != leo {
				t.Fatalf("LEO %d after restart, want %d", re.LogEndOffset(), leo)
			}
			for _, i := range []int{35, 39} { // retries of the last five batches
				res, err := re.AppendAsLeader([]record.Batch{idem(7, 2, int32(i*2), 2)}, AppendOptions{})
				if err != nil || !res.Duplicate || res.FirstOffset != results[i].FirstOffset || res.LastOffset != results[i].LastOffset {
					t.Fatalf("retry %d after restart: %+v %v; original %+v", i, res, err, results[i])
				}
			}
			if re.LogEndOffset() != leo {
				t.Fatal("duplicate appended")
			}
			if _, err := re.AppendAsLeader([]record.Batch{idem(7, 2, 81, 1)}, AppendOptions{}); !errors.Is(err, producer.ErrOutOfOrderSequence) {
				t.Fatalf("gap after restart: %v", err)
			}
			produce(t, re, 7, 2, 80, 1)
		})
	}
}

func TestProducerStateFollowsTruncation(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{SegmentBytes: 1024})
	var results []AppendResult
	for i := range 20 {
		results = append(results, produce(t, l, 3, 0, int32(i), 1))
	}
	if err := l.TruncateTo(results[15].FirstOffset); err != nil {
		t.Fatal(err)
	}
	// Batch 15 is gone: sending it again is a new append, not a duplicate.
	res := produce(t, l, 3, 0, 15, 1)
	if res.Duplicate || res.FirstOffset != results[15].FirstOffset {
		t.Fatalf("re-sent batch after truncation: %+v", res)
	}
	// Batch 14 survived and is still a duplicate.
	res, err := l.AppendAsLeader([]record.Batch{idem(3, 0, 14, 1)}, AppendOptions{})
	if err != nil || !res.Duplicate || res.FirstOffset != results[14].FirstOffset {
		t.Fatalf("retry of a kept batch: %+v %v", res, err)
	}
}

func TestFollowerUpdatesProducerState(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{})
	b := idem(21, 0, 0, 2)
	b.SetBaseOffset(0)
	if err := l.AppendAsFollower([]record.Batch{b}); err != nil {
		t.Fatal(err)
	}
	// After becoming leader, a client retry is recognised.
	res, err := l.AppendAsLeader([]record.Batch{idem(21, 0, 0, 2)}, AppendOptions{})
	if err != nil || !res.Duplicate || res.FirstOffset != 0 || res.LastOffset != 1 {
		t.Fatalf("retry after follower append: %+v %v", res, err)
	}
}

func TestProducerExpiration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := openLog(t, t.TempDir(), Config{SegmentMs: 10, ProducerIDExpirationMs: 1000})
		now := time.Now().UnixMilli()
		for pid, ts := range map[int64]int64{4: now - 5000, 5: now} {
			if _, err := l.AppendAsLeader([]record.Batch{idemAt(pid, 0, 0, 1, ts)}, AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(20 * time.Millisecond)
		appendN(t, l, 1, now) // rolls, expiring producer 4 (5 s old) but not 5
		if len(l.Segments()) != 2 {
			t.Fatalf("%d segments", len(l.Segments()))
		}
		// An expired producer is unknown and may start anywhere.
		if _, err := l.AppendAsLeader([]record.Batch{idemAt(4, 0, 77, 1, now)}, AppendOptions{}); err != nil {
			t.Fatalf("expired producer: %v", err)
		}
		if _, err := l.AppendAsLeader([]record.Batch{idemAt(5, 0, 77, 1, now)}, AppendOptions{}); !errors.Is(err, producer.ErrOutOfOrderSequence) {
			t.Fatalf("live producer: %v", err)
		}
	})
}

// TestExpireProducers: without a roll, ExpireProducers forgets an idle
// idempotent producer and keeps a recent one and one whose transaction
// is open, however old; once that transaction ends it expires too.
func TestExpireProducers(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{ProducerIDExpirationMs: 1000})
	now := time.Now().UnixMilli()
	for pid, ts := range map[int64]int64{4: now - 5000, 5: now} {
		if _, err := l.AppendAsLeader([]record.Batch{idemAt(pid, 0, 0, 1, ts)}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	produceTxn(t, l, 6, 0, 1) // timestamp 0: long idle, but open
	if n := l.ExpireProducers(now); n != 1 {
		t.Fatalf("expired %d, want producer 4 only", n)
	}
	var pids []int64
	for _, p := range l.Producers() {
		pids = append(pids, p.ProducerID)
	}
	if !slices.Equal(pids, []int64{5, 6}) {
		t.Fatalf("producers left %v", pids)
	}
	endTxn(t, l, 6, true)
	if n := l.ExpireProducers(now + 1_000_000_000_000); n != 2 || len(l.Producers()) != 0 {
		t.Fatalf("expired %d, left %+v", n, l.Producers())
	}
}

func TestRollInsideAppendSnapshotsExactly(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{SegmentBytes: 150})
	batches := []record.Batch{idem(9, 0, 0, 1), idem(9, 0, 1, 1), idem(9, 0, 2, 1), idem(9, 0, 3, 1)}
	if _, err := l.AppendAsLeader(batches, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	segs := l.Segments()
	if len(segs) < 2 {
		t.Fatalf("append did not roll: %+v", segs)
	}
	base := segs[1].BaseOffset
	st, err := producer.LoadSnapshot(l.snapshotPath(base))
	if err != nil {
		t.Fatal(err)
	}
	if last, ok := st.Last(9); !ok || last.LastOffset != base-1 {
		t.Fatalf("snapshot at %d ends with %+v", base, last)
	}
}

// TestStartAtWithProducerSnapshot: a log restarted at an offset with the
// producer snapshot taken there (a replica skipping the tier) still
// recognises a retried batch and a sequence gap of a producer it never
// saw a batch of.
func TestStartAtWithProducerSnapshot(t *testing.T) {
	src := openLog(t, t.TempDir(), Config{})
	first := produce(t, src, 21, 0, 0, 3) // offsets 0-2
	path := t.TempDir() + "/snap"
	if err := src.producers.WriteSnapshot(path); err != nil {
		t.Fatal(err)
	}
	snap, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l := openLog(t, t.TempDir(), Config{})
	if err := l.TruncateFullyAndStartAtWithProducers(first.LastOffset+1, snap); err != nil {
		t.Fatal(err)
	}
	res, err := l.AppendAsLeader([]record.Batch{idem(21, 0, 0, 3)}, AppendOptions{})
	if err != nil || !res.Duplicate || res.LastOffset != first.LastOffset {
		t.Fatalf("retried batch: %+v %v, want the duplicate of %+v", res, err, first)
	}
	if _, err := l.AppendAsLeader([]record.Batch{idem(21, 0, 9, 1)}, AppendOptions{}); !errors.Is(err, producer.ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	if res := produce(t, l, 21, 0, 3, 1); res.FirstOffset != first.LastOffset+1 {
		t.Fatalf("next batch at %d, want %d", res.FirstOffset, first.LastOffset+1)
	}
	// An unusable snapshot leaves the state empty; the log still starts.
	if err := l.TruncateFullyAndStartAtWithProducers(10, []byte("not a snapshot")); err != nil || l.LogStartOffset() != 10 {
		t.Fatalf("bad snapshot: %v, start %d", err, l.LogStartOffset())
	}
}
