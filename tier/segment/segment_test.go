package segment

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/strata-broker/strata/tier/record"
)

// TestMain silences the recovery warnings the tests provoke on purpose.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.DiscardHandler))
	os.Exit(m.Run())
}

// testBatch builds a batch of n records at base whose timestamps start at ts
// and grow by one per record.
func testBatch(base int64, n int, ts int64) record.Batch {
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{TimestampDelta: int64(i), Value: fmt.Appendf(nil, "value-%d-%d", base, i)}
	}
	return record.NewBatch(record.BuildOptions{BaseOffset: base, FirstTimestamp: ts}, recs...)
}

// fill appends count batches of 1..4 records to s and returns them.
func fill(t *testing.T, s *Segment, count int) []record.Batch {
	t.Helper()
	var out []record.Batch
	next := s.NextOffset()
	for i := range count {
		b := testBatch(next, 1+i%4, 1000+next*10)
		if err := s.Append(b); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		out = append(out, b)
		next = b.LastOffset() + 1
	}
	return out
}

// sliceBatches reads a Slice's bytes and frames them.
func sliceBatches(t *testing.T, sl Slice) []record.Batch {
	t.Helper()
	buf := make([]byte, sl.Len)
	if _, err := sl.File.ReadAt(buf, sl.Pos); err != nil {
		t.Fatalf("read slice: %v", err)
	}
	bs, err := record.Split(buf)
	if err != nil {
		t.Fatalf("split slice: %v", err)
	}
	return bs
}

// batchFor returns the batch holding offset.
func batchFor(batches []record.Batch, offset int64) record.Batch {
	for _, b := range batches {
		if b.BaseOffset() <= offset && offset <= b.LastOffset() {
			return b
		}
	}
	return nil
}

func newTestSegment(t *testing.T, base int64, interval int) (*Segment, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := Create(dir, base, Options{IndexIntervalBytes: interval})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, dir
}

func TestAppendReadEveryOffset(t *testing.T) {
	s, dir := newTestSegment(t, 1000, 200)
	batches := fill(t, s, 150)
	if len(s.ix.off.entries) < 10 {
		t.Fatalf("expected a sparse index, got %d entries", len(s.ix.off.entries))
	}
	check := func(s *Segment) {
		t.Helper()
		for off := s.BaseOffset(); off < s.NextOffset(); off++ {
			sl, err := s.Read(off, 1, -1)
			if err != nil {
				t.Fatalf("read %d: %v", off, err)
			}
			got := sliceBatches(t, sl)
			sl.Release()
			if len(got) != 1 || !bytes.Equal(got[0], batchFor(batches, off)) {
				t.Fatalf("read %d: got %d batches, want the batch holding it", off, len(got))
			}
		}
		sl, err := s.Read(s.NextOffset(), 1<<20, -1)
		if err != nil || sl.Len != 0 {
			t.Fatalf("read at next offset: %+v, %v", sl, err)
		}
	}
	check(s)
	entries := append([]offsetEntry(nil), s.ix.off.entries...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	re, err := Open(dir, 1000, Options{IndexIntervalBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	if len(re.ix.off.entries) != len(entries) || re.NextOffset() != batches[len(batches)-1].LastOffset()+1 {
		t.Fatalf("reopened: %d entries (want %d), next %d", len(re.ix.off.entries), len(entries), re.NextOffset())
	}
	check(re)
}

func TestReadMaxBytesAndBound(t *testing.T) {
	s, _ := newTestSegment(t, 0, 100)
	batches := fill(t, s, 40)
	size0 := int64(len(batches[0]))

	// Smaller than one batch: exactly the first batch (KIP-74).
	sl, err := s.Read(0, 10, -1)
	if err != nil || sl.Len != size0 {
		t.Fatalf("tiny maxBytes: len %d, err %v; want %d", sl.Len, err, size0)
	}
	sl.Release()

	// A budget of three and a half batches: whole batches only.
	budget := len(batches[0]) + len(batches[1]) + len(batches[2]) + len(batches[3])/2
	sl, err = s.Read(0, budget, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got := sliceBatches(t, sl); len(got) != 3 {
		t.Fatalf("budget read: %d batches, want 3", len(got))
	}
	sl.Release()

	// Upper bound at the batch holding offset 20: nothing from there on.
	bound, err := s.Position(20)
	if err != nil {
		t.Fatal(err)
	}
	sl, err = s.Read(0, 1<<30, bound)
	if err != nil {
		t.Fatal(err)
	}
	got := sliceBatches(t, sl)
	sl.Release()
	if last := got[len(got)-1]; last.LastOffset() >= 20 || batchFor(batches, 20).BaseOffset() != last.LastOffset()+1 {
		t.Fatalf("bounded read ends at %d", last.LastOffset())
	}
	sl, err = s.Read(20, 1<<30, bound)
	if err != nil || sl.Len != 0 {
		t.Fatalf("read at the bound: %+v %v", sl, err)
	}
}

func TestSliceOutlivesDelete(t *testing.T) {
	s, dir := newTestSegment(t, 0, 100)
	batches := fill(t, s, 5)
	sl, err := s.Read(0, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(FileName(dir, 0, LogSuffix)); !os.IsNotExist(err) {
		t.Fatalf("log file still there: %v", err)
	}
	if _, err := s.Read(0, 1, -1); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after delete: %v", err)
	}
	if got := sliceBatches(t, sl); len(got) != len(batches) {
		t.Fatalf("slice after delete: %d batches", len(got))
	}
	f := sl.File
	sl.Release()
	sl.Release() // idempotent
	if _, err := f.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("file still open after the last release: %v", err)
	}
}

func TestTimestampLookup(t *testing.T) {
	s, _ := newTestSegment(t, 0, 64)
	// Timestamps mostly increase, with a few going backwards.
	var batches []record.Batch
	for i := range 60 {
		ts := int64(10_000 + i*100)
		if i%7 == 3 {
			ts -= 550
		}
		b := testBatch(s.NextOffset(), 3, ts)
		if err := s.Append(b); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	if len(s.ix.time.entries) < 5 {
		t.Fatalf("time index has %d entries", len(s.ix.time.entries))
	}
	// Brute force: first record with timestamp ≥ ts at or after minOffset.
	want := func(ts, minOffset int64) (int64, int64, bool) {
		for _, b := range batches {
			recs, _ := b.Records()
			for _, r := range recs {
				if b.Offset(r) >= minOffset && b.Timestamp(r) >= ts {
					return b.Offset(r), b.Timestamp(r), true
				}
			}
		}
		return 0, 0, false
	}
	for ts := int64(9_000); ts <= 16_100; ts += 37 {
		for _, minOff := range []int64{0, 50} {
			wo, wts, wok := want(ts, minOff)
			off, rts, ok, err := s.FindTimestamp(ts, minOff)
			if err != nil || ok != wok || off != wo || rts != wts {
				t.Fatalf("FindTimestamp(%d, %d) = %d, %d, %v, %v; want %d, %d, %v", ts, minOff, off, rts, ok, err, wo, wts, wok)
			}
		}
	}
	wantMax := int64(-1)
	for _, b := range batches {
		wantMax = max(wantMax, b.MaxTimestamp())
	}
	if got := s.MaxTimestamp(); got != wantMax {
		t.Fatalf("max timestamp %d, want %d", got, wantMax)
	}
}

func TestTruncateTo(t *testing.T) {
	s, dir := newTestSegment(t, 0, 100)
	batches := fill(t, s, 30)
	cut := batchFor(batches, 25)
	removed, err := s.TruncateTo(25)
	if err != nil {
		t.Fatal(err)
	}
	if s.NextOffset() != cut.BaseOffset() || removed <= 0 {
		t.Fatalf("after truncate: next %d (want %d), removed %d", s.NextOffset(), cut.BaseOffset(), removed)
	}
	for _, e := range s.ix.off.entries {
		if int64(e.pos) >= s.Size() {
			t.Fatalf("index entry past the end: %+v", e)
		}
	}
	more := fill(t, s, 10)
	sl, err := s.Read(more[0].BaseOffset(), 1, -1)
	if err != nil || !bytes.Equal(sliceBatches(t, sl)[0], more[0]) {
		t.Fatalf("read after truncate and append: %v", err)
	}
	sl.Release()
	if _, err := s.TruncateTo(0); err != nil || s.Size() != 0 || s.NextOffset() != 0 {
		t.Fatalf("truncate to base: size %d next %d err %v", s.Size(), s.NextOffset(), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	re, err := Open(dir, 0, Options{})
	if err != nil || re.Size() != 0 {
		t.Fatalf("reopen empty: %v", err)
	}
	_ = re.Close()
}

func TestAppendErrors(t *testing.T) {
	s, _ := newTestSegment(t, 100, 0)
	if err := s.Append(testBatch(99, 1, 0)); !errors.Is(err, ErrOffsetOrder) {
		t.Fatalf("below base: %v", err)
	}
	if err := s.Append(testBatch(100, 2, 0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(testBatch(101, 1, 0)); !errors.Is(err, ErrOffsetOrder) {
		t.Fatalf("overlapping: %v", err)
	}
	if err := s.Append(testBatch(100+1<<32, 1, 0)); !errors.Is(err, ErrFull) {
		t.Fatalf("relative overflow: %v", err)
	}
	if err := s.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(testBatch(102, 1, 0)); !errors.Is(err, ErrSealed) {
		t.Fatalf("sealed: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(testBatch(102, 1, 0)); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}

func TestBatchesIterator(t *testing.T) {
	s, _ := newTestSegment(t, 0, 50)
	batches := fill(t, s, 20)
	var got []int64
	for h, err := range s.Batches(batches[5].BaseOffset() + 1) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.BaseOffset)
	}
	if len(got) != 15 || got[0] != batches[5].BaseOffset() {
		t.Fatalf("iterated %v", got)
	}
	for range s.Batches(0) {
		break // early stop must not leak the file reference
	}
	if n := s.file.refs.Load(); n != 1 {
		t.Fatalf("file references %d after iteration", n)
	}
}

func TestFileNames(t *testing.T) {
	p := FileName("/d", 42, LogSuffix)
	if p != "/d/00000000000000000042.log" {
		t.Fatalf("file name %q", p)
	}
	if base, suffix, ok := ParseFileName(p); !ok || base != 42 || suffix != LogSuffix {
		t.Fatalf("parse: %d %q %v", base, suffix, ok)
	}
	for _, bad := range []string{"42.log", "0000000000000000004x.log", "leader-epoch-checkpoint"} {
		if _, _, ok := ParseFileName(bad); ok {
			t.Fatalf("parsed %q", bad)
		}
	}
}

// TestDropBehind: with a page-cache window, appends hand the bytes more
// than the window behind the end to writeback and drop them from the
// cache two steps later, a step at a time, and every batch still reads
// back as appended; a truncation below the marks pulls them back.
func TestDropBehind(t *testing.T) {
	dir := t.TempDir()
	const window = 1 << 20
	s, err := Create(dir, 0, Options{CacheWindow: window})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	value := bytes.Repeat([]byte("x"), 64<<10)
	var batches []record.Batch
	for s.Size() < window+4*dropStep+1 {
		b := record.NewBatch(record.BuildOptions{BaseOffset: s.NextOffset(), FirstTimestamp: 1}, record.Record{Value: value})
		if err := s.Append(b); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	if s.writtenBack != 4*dropStep || s.dropped != 2*dropStep {
		t.Fatalf("after %d bytes: written back %d, dropped %d; want %d and %d", s.Size(), s.writtenBack, s.dropped, 4*dropStep, 2*dropStep)
	}
	sl, err := s.Read(0, int(s.Size()), -1)
	if err != nil {
		t.Fatal(err)
	}
	got := sliceBatches(t, sl)
	sl.Release()
	if len(got) != len(batches) {
		t.Fatalf("read %d batches, want %d", len(got), len(batches))
	}
	for i := range got {
		if !bytes.Equal(got[i], batches[i]) {
			t.Fatalf("batch %d differs after drop-behind", i)
		}
	}
	if _, err := s.TruncateTo(batches[1].BaseOffset()); err != nil {
		t.Fatal(err)
	}
	if s.writtenBack > s.Size() || s.dropped > s.Size() {
		t.Fatalf("after truncation to %d bytes: marks %d and %d", s.Size(), s.writtenBack, s.dropped)
	}
}

// TestSetCacheWindow: turning drop-behind on for a segment that has grown
// without it starts at the window behind the end (not at its start), goes
// on a step at a time from there, and turning it off stops it.
func TestSetCacheWindow(t *testing.T) {
	s, err := Create(t.TempDir(), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	value := bytes.Repeat([]byte("x"), 64<<10)
	grow := func(to int64) {
		for s.Size() < to {
			b := record.NewBatch(record.BuildOptions{BaseOffset: s.NextOffset(), FirstTimestamp: 1}, record.Record{Value: value})
			if err := s.Append(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	grow(3 * dropStep)
	if s.writtenBack != 0 || s.dropped != 0 {
		t.Fatalf("without a window: marks %d and %d", s.writtenBack, s.dropped)
	}
	const window = 1 << 20
	s.SetCacheWindow(window)
	if got := s.CacheWindow(); got != window {
		t.Fatalf("CacheWindow %d, want %d", got, window)
	}
	from := s.Size() - window
	if s.writtenBack != from || s.dropped != from {
		t.Fatalf("window turned on at %d bytes: marks %d and %d, want both %d", s.Size(), s.writtenBack, s.dropped, from)
	}
	grow(from + window + 3*dropStep + 1)
	if s.writtenBack != from+3*dropStep || s.dropped != from+dropStep {
		t.Fatalf("marks %d and %d, want %d and %d", s.writtenBack, s.dropped, from+3*dropStep, from+dropStep)
	}
	s.SetCacheWindow(0)
	wb, dr := s.writtenBack, s.dropped
	grow(s.Size() + 2*dropStep)
	if s.writtenBack != wb || s.dropped != dr {
		t.Fatalf("after turning it off: marks moved from %d, %d to %d, %d", wb, dr, s.writtenBack, s.dropped)
	}
}
