package local

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

func TestRecoverTornTail(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 4096, IndexIntervalBytes: 256}
	l := openLog(t, dir, cfg)
	batches := appendN(t, l, 100, 0)
	leo := l.LogEndOffset()
	last := l.Segments()[len(l.Segments())-1]
	l.closeUnclean()

	// A crash mid-write: half a batch, then garbage.
	torn := plain(4, 0)
	torn.SetBaseOffset(leo)
	appendBytes(t, last.LogPath, torn[:len(torn)/2])
	re := openLog(t, dir, cfg)
	if re.LogEndOffset() != leo || fileSize(t, last.LogPath) != last.Size {
		t.Fatalf("after torn batch: LEO %d (want %d), size %d (want %d)", re.LogEndOffset(), leo, fileSize(t, last.LogPath), last.Size)
	}
	checkReads(t, re, batches, 0)
	more := appendN(t, re, 3, 0)
	if more[0].BaseOffset() != leo {
		t.Fatalf("append after recovery at %d, want %d", more[0].BaseOffset(), leo)
	}
	re.closeUnclean()

	// Garbage after whole batches, and a cut through the last batch.
	appendBytes(t, last.LogPath, []byte("not a batch at all, just garbage bytes"))
	re = openLog(t, dir, cfg)
	if re.LogEndOffset() != more[2].LastOffset()+1 {
		t.Fatalf("after garbage: LEO %d", re.LogEndOffset())
	}
	re.closeUnclean()
	if err := os.Truncate(last.LogPath, fileSize(t, last.LogPath)-5); err != nil {
		t.Fatal(err)
	}
	re = openLog(t, dir, cfg)
	if re.LogEndOffset() != more[2].BaseOffset() {
		t.Fatalf("after cut: LEO %d, want %d", re.LogEndOffset(), more[2].BaseOffset())
	}
	checkReads(t, re, append(batches, more[:2]...), 0)
}

func TestCleanShutdownSkipsScan(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Config{})
	batches := appendN(t, l, 10, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, cleanShutdownFile)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("no clean-shutdown marker: %v", err)
	}
	// Damage the CRC-covered payload of the last batch (framing intact):
	// only a recovery scan can notice.
	path := logFile(dir, 0)
	flipByte(t, path, fileSize(t, path)-2)

	re := openLog(t, dir, Config{})
	if re.LogEndOffset() != batches[9].LastOffset()+1 {
		t.Fatalf("clean open scanned the log: LEO %d", re.LogEndOffset())
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("marker not removed at open: %v", err)
	}
	re.closeUnclean()

	// Without the marker the scan drops the damaged batch.
	re = openLog(t, dir, Config{})
	if re.LogEndOffset() != batches[9].BaseOffset() {
		t.Fatalf("unclean open kept the damaged batch: LEO %d", re.LogEndOffset())
	}
	checkReads(t, re, batches[:9], 0)
}

func TestRecoveryPointLimitsScan(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 2048}
	l := openLog(t, dir, cfg)
	appendN(t, l, 60, 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	rp := l.RecoveryPoint()
	appendN(t, l, 5, 0)
	segs := l.Segments()
	l.closeUnclean()

	// Damage a batch in the first segment (below the recovery point, not
	// rescanned) and the tail of the last one (rescanned).
	first := segs[0]
	if first.NextOffset > rp {
		t.Fatalf("first segment not below the recovery point %d", rp)
	}
	flipByte(t, first.LogPath, first.Size-2)
	lastSeg := segs[len(segs)-1]
	appendBytes(t, lastSeg.LogPath, []byte{0, 0, 0})

	re := openLog(t, dir, cfg)
	if got := fileSize(t, first.LogPath); got != first.Size {
		t.Fatalf("segment below the recovery point was scanned: size %d, was %d", got, first.Size)
	}
	if got := fileSize(t, lastSeg.LogPath); got != lastSeg.Size {
		t.Fatalf("last segment not recovered: size %d, want %d", got, lastSeg.Size)
	}
	if re.LogEndOffset() != lastSeg.NextOffset {
		t.Fatalf("LEO %d, want %d", re.LogEndOffset(), lastSeg.NextOffset)
	}
}

func TestCorruptMiddleSegmentDropsLaterOnes(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 2048}
	l := openLog(t, dir, cfg)
	appendN(t, l, 60, 0)
	segs := l.Segments()
	l.closeUnclean()
	if err := os.Remove(filepath.Join(dir, checkpointFile)); err != nil {
		t.Fatal(err) // no recovery point: everything is scanned
	}
	mid := segs[1]
	if err := os.Truncate(mid.LogPath, mid.Size-10); err != nil {
		t.Fatal(err)
	}
	re := openLog(t, dir, cfg)
	got := re.Segments()
	if len(got) != 2 || re.LogEndOffset() >= mid.NextOffset {
		t.Fatalf("after a torn middle segment: %d segments, LEO %d", len(got), re.LogEndOffset())
	}
	if _, err := os.Stat(segs[2].LogPath); !os.IsNotExist(err) {
		t.Fatalf("later segment kept: %v", err)
	}
}

func TestMissingAndCorruptIndexesRebuilt(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 4096, IndexIntervalBytes: 200}
	l := openLog(t, dir, cfg)
	batches := appendN(t, l, 200, 0)
	segs := l.Segments()
	if len(segs) < 3 {
		t.Fatalf("only %d segments", len(segs))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(segs[0].IndexPath)
	if err != nil || len(orig) == 0 {
		t.Fatalf("index of the first segment: %d bytes, %v", len(orig), err)
	}
	if err := os.Remove(segs[0].IndexPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(segs[1].TimeIndexPath); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(segs[2].IndexPath, []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	re := openLog(t, dir, cfg) // clean open: indexes are checked anyway
	checkReads(t, re, batches, 0)
	if err := re.Close(); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := os.ReadFile(segs[0].IndexPath)
	if err != nil || string(rebuilt) != string(orig) {
		t.Fatalf("index not rebuilt identically: %d bytes vs %d, %v", len(rebuilt), len(orig), err)
	}
	if fileSize(t, segs[2].IndexPath)%8 != 0 {
		t.Fatal("torn index not rebuilt")
	}
}

func TestDeleteRecordsBeforeSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 2048}
	l := openLog(t, dir, cfg)
	batches := appendN(t, l, 80, 0)
	segs := l.Segments()
	cut := segs[2].BaseOffset + 3
	if err := l.DeleteRecordsBefore(cut); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != cut || l.Segments()[0].BaseOffset != segs[2].BaseOffset {
		t.Fatalf("start %d, first segment %d", l.LogStartOffset(), l.Segments()[0].BaseOffset)
	}
	if _, err := os.Stat(segs[0].LogPath); !os.IsNotExist(err) {
		t.Fatalf("old segment not deleted: %v", err)
	}
	if _, err := l.Read(cut-1, 1, -1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
	if err := l.DeleteRecordsBefore(l.LogEndOffset() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("delete past LEO: %v", err)
	}
	if err := l.DeleteRecordsBefore(1); err != nil || l.LogStartOffset() != cut {
		t.Fatalf("moving the start back: %v, start %d", err, l.LogStartOffset())
	}
	l.closeUnclean()
	re := openLog(t, dir, cfg)
	if re.LogStartOffset() != cut {
		t.Fatalf("log start after restart %d, want %d", re.LogStartOffset(), cut)
	}
	checkReads(t, re, batches, cut)
	// Deleting up to the log end keeps the active segment.
	if err := re.DeleteRecordsBefore(re.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if n := len(re.Segments()); n != 1 {
		t.Fatalf("%d segments after deleting everything", n)
	}
	if sl, err := re.Read(re.LogEndOffset(), 100, -1); err != nil || sl.Len != 0 {
		t.Fatalf("read at start=end: %v", err)
	}
}

func TestTruncateTo(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 2048}
	l := openLog(t, dir, cfg)
	batches := appendN(t, l, 80, 0)
	segs := l.Segments()
	// Into the middle of a batch of the second segment: the whole batch goes.
	var victim record.Batch
	for _, b := range batches {
		if b.BaseOffset() > segs[1].BaseOffset && b.LastOffset() > b.BaseOffset() {
			victim = b
			break
		}
	}
	if err := l.TruncateTo(victim.BaseOffset() + 1); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != victim.BaseOffset() || len(l.Segments()) != 2 {
		t.Fatalf("LEO %d (want %d), %d segments", l.LogEndOffset(), victim.BaseOffset(), len(l.Segments()))
	}
	for _, s := range segs[2:] {
		if _, err := os.Stat(s.LogPath); !os.IsNotExist(err) {
			t.Fatalf("segment %d survived", s.BaseOffset)
		}
	}
	if l.Segments()[1].Sealed {
		t.Fatal("the new active segment is still sealed")
	}
	kept := batches[:0:0]
	for _, b := range batches {
		if b.LastOffset() < victim.BaseOffset() {
			kept = append(kept, b)
		}
	}
	checkReads(t, l, kept, 0)
	more := appendN(t, l, 20, 0)
	if more[0].BaseOffset() != victim.BaseOffset() {
		t.Fatalf("append after truncation at %d", more[0].BaseOffset())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	re := openLog(t, dir, cfg)
	checkReads(t, re, append(kept, more...), 0)

	// Below the first segment: the log restarts empty at the offset.
	if err := re.DeleteRecordsBefore(segs[1].BaseOffset); err != nil {
		t.Fatal(err)
	}
	if err := re.TruncateTo(5); err != nil {
		t.Fatal(err)
	}
	if re.LogStartOffset() != 5 || re.LogEndOffset() != 5 || len(re.Segments()) != 1 {
		t.Fatalf("after full truncation: start %d end %d, %d segments", re.LogStartOffset(), re.LogEndOffset(), len(re.Segments()))
	}
	if got := appendN(t, re, 1, 0); got[0].BaseOffset() != 5 {
		t.Fatalf("append after full truncation at %d", got[0].BaseOffset())
	}
	if _, err := os.Stat(segment.FileName(dir, 5, segment.LogSuffix)); err != nil {
		t.Fatal(err)
	}
}
