package local

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-broker/strata/test/tmpfs"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// TestAppendOnFullDisk fills a real (tmpfs) filesystem: the append that
// does not fit fails with ErrStorage and segment.ErrNoSpace and leaves the
// log as it was (readable, no partial batch), later appends fail the same
// way without failing the log, and once space is freed appends resume at
// the same offset, without reopening; a reopened log holds exactly the
// acknowledged batches.
func TestAppendOnFullDisk(t *testing.T) {
	mnt := tmpfs.Mount(t, 2<<20)
	filler := filepath.Join(mnt, "filler")
	tmpfs.Fill(t, filler, 512<<10)
	dir := filepath.Join(mnt, "t-0")
	// Small segments, so the disk also runs out in the middle of rolls.
	cfg := Config{SegmentBytes: 100 << 10}
	l := openLog(t, dir, cfg)

	var stored []record.Batch
	var full error
	for i := 0; i < 1000 && full == nil; i++ {
		b := bigBatch(i, 20<<10)
		if _, err := l.AppendAsLeader([]record.Batch{b}, AppendOptions{LeaderEpoch: 1}); err != nil {
			full = err
			break
		}
		stored = append(stored, b)
	}
	if full == nil {
		t.Fatal("the disk never filled up")
	}
	if !errors.Is(full, ErrStorage) || !errors.Is(full, segment.ErrNoSpace) {
		t.Fatalf("append on a full disk: %v, want ErrStorage and segment.ErrNoSpace", full)
	}
	leo := l.LogEndOffset()
	if want := stored[len(stored)-1].LastOffset() + 1; leo != want {
		t.Fatalf("log end %d after the failed append, want %d", leo, want)
	}
	checkReads(t, l, stored, 0)
	checkWholeBatches(t, l)

	// Still full: the same error, and the log is not failed.
	for range 3 {
		_, err := l.AppendAsLeader([]record.Batch{bigBatch(-1, 20<<10)}, AppendOptions{LeaderEpoch: 1})
		if !errors.Is(err, segment.ErrNoSpace) {
			t.Fatalf("append on a still full disk: %v", err)
		}
	}
	if err := l.usable(); err != nil {
		t.Fatalf("log failed by a full disk: %v", err)
	}

	// A roll on a full disk (the old segment's indexes cannot be written)
	// undoes itself: the same segments, the active one still open.
	tmpfs.Fill(t, filepath.Join(mnt, "rest"), 1<<20)
	segs := l.Segments()
	l.SetConfig(Config{SegmentBytes: 1 << 10})
	if _, err := l.AppendAsLeader([]record.Batch{bigBatch(-1, 100)}, AppendOptions{LeaderEpoch: 1}); !errors.Is(err, segment.ErrNoSpace) {
		t.Fatalf("append that rolls on a full disk: %v", err)
	}
	if after := l.Segments(); len(after) != len(segs) || after[len(after)-1].Sealed {
		t.Fatalf("segments after a failed roll: %d (last sealed %v), before %d", len(after), after[len(after)-1].Sealed, len(segs))
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*.log")); len(names) != len(segs) {
		t.Fatalf("%d segment files after a failed roll, want %d", len(names), len(segs))
	}
	l.SetConfig(cfg)

	for _, f := range []string{filler, filepath.Join(mnt, "rest")} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		b := bigBatch(1000+i, 20<<10)
		res, err := l.AppendAsLeader([]record.Batch{b}, AppendOptions{LeaderEpoch: 2})
		if err != nil {
			t.Fatalf("append %d after freeing space: %v", i, err)
		}
		if i == 0 && res.FirstOffset != leo {
			t.Fatalf("first append after freeing space at %d, want the old log end %d", res.FirstOffset, leo)
		}
		stored = append(stored, b)
	}
	checkReads(t, l, stored, 0)
	if e, off := l.EndOffsetForEpoch(1); e != 1 || off != leo {
		t.Fatalf("epoch 1 ends at (%d, %d), want (1, %d)", e, off, leo)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	l2 := openLog(t, dir, cfg)
	checkReads(t, l2, stored, 0)
	if got, want := l2.LogEndOffset(), stored[len(stored)-1].LastOffset()+1; got != want {
		t.Fatalf("reopened log end %d, want %d", got, want)
	}
}

// bigBatch is one record of about size bytes of value.
func bigBatch(i, size int) record.Batch {
	v := make([]byte, size)
	for j := range v {
		v[j] = byte(i + j)
	}
	return record.NewBatch(record.BuildOptions{FirstTimestamp: 1000 + int64(i)}, record.Record{Value: v})
}

// checkWholeBatches verifies that every segment's file holds exactly its
// whole batches: nothing of a failed append was left behind.
func checkWholeBatches(t *testing.T, l *Log) {
	t.Helper()
	for _, s := range l.Segments() {
		if got := fileSize(t, s.LogPath); got != s.Size {
			t.Fatalf("segment %d: file of %d bytes, %d bytes of batches", s.BaseOffset, got, s.Size)
		}
	}
}

// TestSpaceCheck: an append asks Config.SpaceCheck for its bytes first; a
// refusal fails it as a full disk would, with nothing written, for
// leader and follower appends alike.
func TestSpaceCheck(t *testing.T) {
	var asked int64
	var refuse error
	cfg := Config{SpaceCheck: func(n int64) error {
		asked += n
		return refuse
	}}
	l := openLog(t, t.TempDir(), cfg)
	b := plain(3, 1000)
	if _, err := l.AppendAsLeader([]record.Batch{b}, AppendOptions{LeaderEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	if asked != int64(len(b)) {
		t.Fatalf("asked for %d bytes, the batch has %d", asked, len(b))
	}
	refuse = errors.New("kept for the metadata store")
	_, err := l.AppendAsLeader([]record.Batch{plain(1, 2000)}, AppendOptions{LeaderEpoch: 1})
	if !errors.Is(err, ErrStorage) || !errors.Is(err, segment.ErrNoSpace) || !errors.Is(err, refuse) {
		t.Fatalf("refused append: %v", err)
	}
	f := plain(1, 3000)
	f.SetBaseOffset(l.LogEndOffset())
	if err := l.AppendAsFollower([]record.Batch{f}); !errors.Is(err, refuse) {
		t.Fatalf("refused follower append: %v", err)
	}
	if l.LogEndOffset() != 3 {
		t.Fatalf("log end %d after refused appends, want 3", l.LogEndOffset())
	}
	refuse = nil
	if _, err := l.AppendAsLeader([]record.Batch{plain(1, 4000)}, AppendOptions{LeaderEpoch: 1}); err != nil {
		t.Fatalf("append once allowed again: %v", err)
	}
}
