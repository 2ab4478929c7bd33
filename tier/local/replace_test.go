package local

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// readAllBatches reads every batch from the log start to the log end.
func readAllBatches(t *testing.T, l *Log) []record.Batch {
	t.Helper()
	var out []record.Batch
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		sl, err := l.Read(off, math.MaxInt32, -1)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		bs := readSlice(t, sl)
		if len(bs) == 0 {
			t.Fatalf("read %d: nothing before the log end %d", off, l.LogEndOffset())
		}
		for _, b := range bs {
			out = append(out, append(record.Batch(nil), b...))
		}
		off = bs[len(bs)-1].LastOffset() + 1
	}
	return out
}

// sameBatches reports whether two batch lists are byte-identical.
func sameBatches(a, b []record.Batch) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// copyDir copies the regular files of src into a new directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// keepFunc decides whether a cleaned copy keeps a batch: n counts the
// batches of the group from 1, last marks the group's last batch.
type keepFunc func(n int, last bool) bool

// Ways a cleaned group can come out: every other batch and the last; every
// other batch without the last few (the cleaned segment ends early); none
// (the cleaned segment is empty).
var (
	keepAlternate = func(n int, last bool) bool { return n%2 == 1 || last }
	keepHead      = func(n int, _ bool) bool { return n%2 == 1 && n < 8 }
	keepNone      = func(int, bool) bool { return false }
)

// cleanGroup writes a cleaned copy of the segments in old, keeping every
// other batch and always the last, and returns it sealed and flushed with
// the batches it kept.
func cleanGroup(t *testing.T, l *Log, old []SegmentInfo) (*segment.Segment, []record.Batch) {
	t.Helper()
	return cleanGroupKeeping(t, l, old, keepAlternate)
}

// cleanGroupKeeping is cleanGroup keeping the batches keep selects.
func cleanGroupKeeping(t *testing.T, l *Log, old []SegmentInfo, keep keepFunc) (*segment.Segment, []record.Batch) {
	t.Helper()
	cleaned, err := l.CreateCleaned(old[0].BaseOffset)
	if err != nil {
		t.Fatal(err)
	}
	var kept []record.Batch
	n := 0
	for i, s := range old {
		sl, err := l.ReadSegment(s)
		if err != nil {
			t.Fatal(err)
		}
		bs := readSlice(t, sl)
		for j, b := range bs {
			n++
			if !keep(n, i == len(old)-1 && j == len(bs)-1) {
				continue
			}
			if err := cleaned.Append(b); err != nil {
				t.Fatal(err)
			}
			kept = append(kept, append(record.Batch(nil), b...))
		}
	}
	if err := errors.Join(cleaned.Seal(), cleaned.Flush()); err != nil {
		t.Fatal(err)
	}
	return cleaned, kept
}

func TestReplaceSegments(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 1024, IndexIntervalBytes: 128}
	l := openLog(t, dir, cfg)
	appendN(t, l, 60, 1000)
	segs := l.Segments()
	if len(segs) < 5 {
		t.Fatalf("only %d segments", len(segs))
	}
	before := readAllBatches(t, l)
	old := segs[1:4]
	// A reader holding a Slice of an old segment keeps reading it.
	held, err := l.Read(old[1].BaseOffset, math.MaxInt32, -1)
	if err != nil {
		t.Fatal(err)
	}
	cleaned, kept := cleanGroup(t, l, old)
	if err := l.ReplaceSegments(old, cleaned); err != nil {
		t.Fatal(err)
	}
	if got := readSlice(t, held); len(got) == 0 {
		t.Fatal("held slice unreadable after the swap")
	}
	var want []record.Batch
	for _, b := range before {
		if b.BaseOffset() < old[0].BaseOffset || b.BaseOffset() >= old[2].NextOffset {
			want = append(want, b)
		}
	}
	want = append(want[:0:0], want...)
	want = mergeByOffset(want, kept)
	if got := readAllBatches(t, l); !sameBatches(got, want) {
		t.Fatalf("after replace: %d batches, want %d", len(got), len(want))
	}
	after := l.Segments()
	if len(after) != len(segs)-2 || after[1].BaseOffset != old[0].BaseOffset || after[1].NextOffset != old[2].NextOffset {
		t.Fatalf("segments after replace: %+v", after)
	}
	for _, name := range dirNames(t, dir) {
		if strings.HasSuffix(name, CleanedFileSuffix) || strings.HasSuffix(name, SwapFileSuffix) {
			t.Fatalf("leftover %s", name)
		}
	}
	// Stale infos are refused, and the refused segment is deleted.
	stale, _ := cleanGroup(t, l, after[1:2])
	if err := l.ReplaceSegments(old, stale); !errors.Is(err, ErrSegmentsChanged) {
		t.Fatalf("stale replace: %v", err)
	}
	if _, err := os.Stat(stale.LogPath()); !os.IsNotExist(err) {
		t.Fatalf("refused cleaned segment still on disk: %v", err)
	}
	// Reopening (clean and unclean) gives the same log.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	re := openLog(t, dir, cfg)
	if got := readAllBatches(t, re); !sameBatches(got, want) {
		t.Fatal("reopened log differs")
	}
	re.closeUnclean()
	re = openLog(t, dir, cfg)
	if got := readAllBatches(t, re); !sameBatches(got, want) {
		t.Fatal("recovered log differs")
	}
}

// TestReplaceWithEmptySegment: a group cleaned down to nothing is swapped
// in as an empty segment; reads inside it move on to the next segment,
// and a later swap merges it with its neighbour (a group ending with an
// empty segment).
func TestReplaceWithEmptySegment(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 1024, IndexIntervalBytes: 128}
	l := openLog(t, dir, cfg)
	appendN(t, l, 60, 1000)
	segs := l.Segments()
	before := readAllBatches(t, l)
	leo := l.LogEndOffset()
	cleaned, _ := cleanGroupKeeping(t, l, segs[1:3], keepNone)
	if err := l.ReplaceSegments(segs[1:3], cleaned); err != nil {
		t.Fatal(err)
	}
	var want []record.Batch
	for _, b := range before {
		if b.BaseOffset() < segs[1].BaseOffset || b.BaseOffset() >= segs[2].NextOffset {
			want = append(want, b)
		}
	}
	if got := readAllBatches(t, l); !sameBatches(got, want) || l.LogEndOffset() != leo {
		t.Fatalf("after emptying: %d batches (want %d), log end %d (want %d)", len(got), len(want), l.LogEndOffset(), leo)
	}
	// A read inside the emptied range, bounded by a high watermark past it,
	// answers with the next segment's first batch.
	sl, err := l.Read(segs[1].BaseOffset+1, 1, segs[3].NextOffset)
	if err != nil {
		t.Fatal(err)
	}
	if bs := readSlice(t, sl); len(bs) != 1 || bs[0].BaseOffset() != segs[3].BaseOffset {
		t.Fatalf("read in the emptied range: %d batches", len(bs))
	}
	mid := l.Segments()
	if e := mid[1]; e.BaseOffset != segs[1].BaseOffset || e.NextOffset != e.BaseOffset || e.Size != 0 {
		t.Fatalf("emptied segment %+v", e)
	}
	// Merge the first segment with the empty one.
	merged, kept := cleanGroup(t, l, mid[:2])
	if err := l.ReplaceSegments(mid[:2], merged); err != nil {
		t.Fatal(err)
	}
	want = mergeByOffset(kept, want[len(batchesIn(t, before, segs[0])):])
	if got := readAllBatches(t, l); !sameBatches(got, want) {
		t.Fatalf("after merging: %d batches, want %d", len(got), len(want))
	}
	if n := len(l.Segments()); n != len(segs)-2 {
		t.Fatalf("%d segments after merging, want %d", n, len(segs)-2)
	}
	for _, name := range dirNames(t, dir) {
		if strings.HasSuffix(name, swapEndSuffix) {
			t.Fatalf("leftover %s", name)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	re := openLog(t, dir, cfg)
	if got := readAllBatches(t, re); !sameBatches(got, want) || len(re.Segments()) != len(segs)-2 {
		t.Fatal("reopened log differs")
	}
	re.closeUnclean()
	re = openLog(t, dir, cfg)
	if got := readAllBatches(t, re); !sameBatches(got, want) || len(re.Segments()) != len(segs)-2 {
		t.Fatal("recovered log differs")
	}
}

// batchesIn returns the batches of before that lie in segment s.
func batchesIn(t *testing.T, before []record.Batch, s SegmentInfo) []record.Batch {
	t.Helper()
	var out []record.Batch
	for _, b := range before {
		if b.BaseOffset() >= s.BaseOffset && b.LastOffset() < s.NextOffset {
			out = append(out, b)
		}
	}
	return out
}

func TestReplaceSegmentsRefusesActiveAndBadRange(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{SegmentBytes: 1024})
	appendN(t, l, 30, 0)
	segs := l.Segments()
	active := segs[len(segs)-1:]
	c, _ := cleanGroup(t, l, segs[:1])
	if err := l.ReplaceSegments(active, c); !errors.Is(err, ErrSegmentsChanged) {
		t.Fatalf("replacing the active segment: %v", err)
	}
	c, _ = cleanGroup(t, l, segs[:2])
	if err := l.ReplaceSegments(segs[:1], c); err == nil {
		t.Fatal("a cleaned segment reaching past the replaced range was accepted")
	}
	c, _ = cleanGroup(t, l, segs[1:2])
	if err := l.ReplaceSegments(segs[:2], c); err == nil {
		t.Fatal("a cleaned segment starting after the replaced range was accepted")
	}
	if err := l.DeleteRecordsBefore(segs[1].BaseOffset); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReadSegment(segs[0]); !errors.Is(err, ErrSegmentsChanged) {
		t.Fatalf("reading a deleted segment: %v", err)
	}
}

// mergeByOffset merges two offset-sorted batch lists.
func mergeByOffset(a, b []record.Batch) []record.Batch {
	out := make([]record.Batch, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		if len(b) == 0 || (len(a) > 0 && a[0].BaseOffset() < b[0].BaseOffset()) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestCrashDuringSwap snapshots the directory at every step of a swap,
// adds the states in between (one file renamed or deleted at a time), and
// checks that recovering each gives exactly the old or exactly the new
// segment set: for a cleaned segment ending where the replaced ones did,
// one ending earlier, and one holding no batch at all.
func TestCrashDuringSwap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keep  keepFunc
		short bool // the cleaned segment ends before the last old segment's base
	}{{"last batch kept", keepAlternate, false}, {"ends early", keepHead, true}, {"no batches", keepNone, true}} {
		t.Run(tc.name, func(t *testing.T) { crashDuringSwap(t, tc.keep, tc.short) })
	}
}

func crashDuringSwap(t *testing.T, keep keepFunc, short bool) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 1024, IndexIntervalBytes: 128}
	l := openLog(t, dir, cfg)
	appendN(t, l, 60, 1000)
	segs := l.Segments()
	old := segs[1:4]
	oldSet := readAllBatches(t, l)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	cleaned, kept := cleanGroupKeeping(t, l, old, keep)
	if end := cleaned.NextOffset(); short != (end <= old[2].BaseOffset) {
		t.Fatalf("cleaned segment ends at %d; last old segment [%d, %d)", end, old[2].BaseOffset, old[2].NextOffset)
	}
	var newSet []record.Batch
	for _, b := range oldSet {
		if b.BaseOffset() < old[0].BaseOffset || b.BaseOffset() >= old[2].NextOffset {
			newSet = append(newSet, b)
		}
	}
	newSet = mergeByOffset(newSet, kept)

	type state struct {
		name      string
		dir       string
		committed bool
	}
	states := []state{{"cleaned written", copyDir(t, dir), false}}
	rename := func(d, from, to string) {
		t.Helper()
		if err := os.Rename(filepath.Join(d, from), filepath.Join(d, to)); err != nil {
			t.Fatal(err)
		}
	}
	name := func(base int64, suffix string) string { return filepath.Base(segment.FileName("", base, suffix)) }
	b0 := old[0].BaseOffset

	replaceHook = func(step string) error {
		states = append(states, state{step, copyDir(t, dir), step != "swap-end"})
		return nil
	}
	t.Cleanup(func() { replaceHook = nil })
	if err := l.ReplaceSegments(old, cleaned); err != nil {
		t.Fatal(err)
	}
	replaceHook = nil
	// Commit in progress: indexes renamed to .swap one by one, .log not yet.
	if states[1].name != "swap-end" {
		t.Fatalf("second state %q", states[1].name)
	}
	d := copyDir(t, states[1].dir)
	rename(d, name(b0, segment.IndexSuffix+CleanedFileSuffix), name(b0, segment.IndexSuffix+SwapFileSuffix))
	states = append(states, state{"index renamed to swap", d, false})
	d = copyDir(t, d)
	rename(d, name(b0, segment.TimeIndexSuffix+CleanedFileSuffix), name(b0, segment.TimeIndexSuffix+SwapFileSuffix))
	states = append(states, state{"both indexes renamed to swap", d, false})
	// Between "deleted-1" and "deleted-2": one old segment's .log gone,
	// its indexes still there.
	for _, s := range states {
		if s.name == "deleted-1" {
			d = copyDir(t, s.dir)
			if err := os.Remove(filepath.Join(d, name(old[2].BaseOffset, segment.LogSuffix))); err != nil {
				t.Fatal(err)
			}
			states = append(states, state{"third old log deleted, indexes not", d, true})
			// Final renames in progress: indexes renamed, .log.swap not.
			d = copyDir(t, d)
			for _, sfx := range []string{segment.IndexSuffix, segment.TimeIndexSuffix} {
				_ = os.Remove(filepath.Join(d, name(old[2].BaseOffset, sfx)))
			}
			states = append(states, state{"all old deleted", d, true})
			d = copyDir(t, d)
			rename(d, name(b0, segment.IndexSuffix+SwapFileSuffix), name(b0, segment.IndexSuffix))
			states = append(states, state{"index renamed to final", d, true})
			d = copyDir(t, d)
			rename(d, name(b0, segment.TimeIndexSuffix+SwapFileSuffix), name(b0, segment.TimeIndexSuffix))
			states = append(states, state{"both indexes renamed to final", d, true})
			break
		}
	}
	if len(states) < 10 {
		t.Fatalf("only %d states captured", len(states))
	}
	for _, s := range states {
		re, err := Open(s.dir, cfg, quiet)
		if err != nil {
			t.Fatalf("%s: open: %v", s.name, err)
		}
		got := readAllBatches(t, re)
		want, which := oldSet, "old"
		if s.committed {
			want, which = newSet, "new"
		}
		if !sameBatches(got, want) {
			t.Errorf("%s: recovered %d batches, not the %s set (%d batches)", s.name, len(got), which, len(want))
		}
		wantSegs := len(segs)
		if s.committed {
			wantSegs -= len(old) - 1
		}
		if n := len(re.Segments()); n != wantSegs {
			t.Errorf("%s: recovered %d segments, not the %s set (%d)", s.name, n, which, wantSegs)
		}
		for _, n := range dirNames(t, s.dir) {
			if strings.HasSuffix(n, CleanedFileSuffix) || strings.HasSuffix(n, SwapFileSuffix) || strings.HasSuffix(n, swapEndSuffix) {
				t.Errorf("%s: leftover %s after recovery", s.name, n)
			}
		}
		// Appends go on after recovery.
		if _, err := re.AppendAsLeader([]record.Batch{plain(2, 5000)}, AppendOptions{}); err != nil {
			t.Errorf("%s: append after recovery: %v", s.name, err)
		}
		if err := re.Close(); err != nil {
			t.Errorf("%s: close: %v", s.name, err)
		}
	}
}

func TestCleanerPointPersistsAndFollowsTruncation(t *testing.T) {
	dir := t.TempDir()
	l := openLog(t, dir, Config{SegmentBytes: 1024})
	if p := l.CleanerPoint(); p.FirstDirtyOffset != 0 || p.DeleteHorizonMs != math.MaxInt64 {
		t.Fatalf("fresh cleaner point %+v", p)
	}
	appendN(t, l, 40, 0)
	want := CleanerPoint{FirstDirtyOffset: 50, DeleteHorizonMs: 12345}
	if err := l.SetCleanerPoint(want); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	re := openLog(t, dir, Config{SegmentBytes: 1024})
	if got := re.CleanerPoint(); got != want {
		t.Fatalf("reopened cleaner point %+v, want %+v", got, want)
	}
	if err := re.TruncateTo(20); err != nil {
		t.Fatal(err)
	}
	if got := re.CleanerPoint().FirstDirtyOffset; got > re.LogEndOffset() {
		t.Fatalf("cleaner point %d past the log end %d after truncation", got, re.LogEndOffset())
	}
}

func TestProducerLastOffset(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{})
	if _, err := l.AppendAsLeader([]record.Batch{idem(7, 0, 0, 3)}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader([]record.Batch{idem(7, 0, 3, 2)}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if off, ok := l.ProducerLastOffset(7); !ok || off != 4 {
		t.Fatalf("last offset of producer 7: %d %v", off, ok)
	}
	if _, ok := l.ProducerLastOffset(8); ok {
		t.Fatal("unknown producer reported")
	}
}
