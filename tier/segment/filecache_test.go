package segment

import (
	"bytes"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/strata-broker/strata/tier/record"
)

// openFDs counts the process's open descriptors (Linux).
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open files: %v", err)
	}
	return len(entries)
}

// sealedSegments creates n consecutive segments in dir sharing files, each
// filled with batches, sealed and flushed; it returns them and their
// batches.
func sealedSegments(t *testing.T, dir string, n int, files *FileCache) ([]*Segment, [][]record.Batch) {
	t.Helper()
	var segs []*Segment
	var batches [][]record.Batch
	next := int64(0)
	for range n {
		s, err := Create(dir, next, Options{IndexIntervalBytes: 64, Files: files})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		bs := fill(t, s, 20)
		if err := s.Seal(); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		segs, batches = append(segs, s), append(batches, bs)
		next = s.NextOffset()
	}
	return segs, batches
}

// readEvery reads every batch of s and checks it against want.
func readEvery(t *testing.T, s *Segment, want []record.Batch) {
	t.Helper()
	for _, b := range want {
		sl, err := s.Read(b.BaseOffset(), 1, -1)
		if err != nil {
			t.Fatalf("read %d: %v", b.BaseOffset(), err)
		}
		got := sliceBatches(t, sl)
		sl.Release()
		if len(got) != 1 || !bytes.Equal(got[0], b) {
			t.Fatalf("read %d: wrong batch", b.BaseOffset())
		}
	}
}

// TestFileCacheBoundsOpenFiles: with more sealed segments than the cache
// holds, every segment reads correctly and the process never has more
// than the cache's bound of their files open.
func TestFileCacheBoundsOpenFiles(t *testing.T) {
	const bound = 4
	before := openFDs(t)
	files := NewFileCache(bound)
	segs, batches := sealedSegments(t, t.TempDir(), 30, files)
	if got := openFDs(t); got > before+bound {
		t.Fatalf("%d descriptors open after creating 30 segments, want at most %d", got, before+bound)
	}
	for round := range 2 {
		for i, s := range segs {
			readEvery(t, s, batches[i])
			if got := openFDs(t); got > before+bound {
				t.Fatalf("round %d segment %d: %d descriptors open, want at most %d", round, i, got, before+bound)
			}
			if n := files.Len(); n > bound {
				t.Fatalf("cache holds %d files, bound %d", n, bound)
			}
		}
	}
	// Timestamp look-ups and batch scans open evicted files too.
	for i, s := range segs {
		b := batches[i][3]
		if off, _, ok, err := s.FindTimestamp(b.MaxTimestamp(), 0); err != nil || !ok || off > b.LastOffset() {
			t.Fatalf("segment %d: FindTimestamp = %d, %v, %v", i, off, ok, err)
		}
		n := 0
		for _, err := range s.Batches(s.BaseOffset()) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != len(batches[i]) {
			t.Fatalf("segment %d: %d batches scanned, want %d", i, n, len(batches[i]))
		}
	}
	if got := openFDs(t); got > before+bound {
		t.Fatalf("%d descriptors open, want at most %d", got, before+bound)
	}
}

// TestFileCacheEvictionKeepsSlices: a Slice of a segment whose file the
// cache evicts still reads, and its descriptor closes on release.
func TestFileCacheEvictionKeepsSlices(t *testing.T) {
	files := NewFileCache(1)
	segs, batches := sealedSegments(t, t.TempDir(), 3, files)
	before := openFDs(t)
	sl, err := segs[0].Read(segs[0].BaseOffset(), 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	readEvery(t, segs[1], batches[1]) // evicts segment 0's file
	readEvery(t, segs[2], batches[2])
	got := sliceBatches(t, sl)
	if len(got) != len(batches[0]) || !bytes.Equal(got[0], batches[0][0]) {
		t.Fatalf("evicted segment's slice read %d batches, want %d", len(got), len(batches[0]))
	}
	if n := openFDs(t); n != before+1 {
		t.Fatalf("%d descriptors open with a slice in flight, want %d (the slice's and the cache's one)", n, before+1)
	}
	sl.Release()
	if n := openFDs(t); n != before {
		t.Fatalf("%d descriptors open after release, want %d", n, before)
	}
	// Deleting a segment the cache holds closes its file.
	readEvery(t, segs[0], batches[0])
	if err := segs[0].Delete(); err != nil {
		t.Fatal(err)
	}
	if n, l := openFDs(t), files.Len(); n != before-1 || l != 0 {
		t.Fatalf("after deleting the cached segment: %d descriptors (want %d), cache holds %d", n, before-1, l)
	}
}

// TestFileCachePinsUntilFlushed: a sealed segment keeps its file out of
// the cache until its writes are flushed; an active one always does.
func TestFileCachePinsUntilFlushed(t *testing.T) {
	files := NewFileCache(8)
	s, err := Create(t.TempDir(), 0, Options{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fill(t, s, 5)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if files.Len() != 0 {
		t.Fatal("an active segment's file went to the cache")
	}
	fill(t, s, 5)
	if err := s.Seal(); err != nil {
		t.Fatal(err)
	}
	if files.Len() != 0 {
		t.Fatal("a sealed segment with unflushed writes gave up its file")
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if files.Len() != 1 {
		t.Fatalf("cache holds %d files after the flush, want 1", files.Len())
	}
	// A second flush has nothing to sync and needs no file.
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestFileCacheTruncateSealed: truncating a sealed segment whose file was
// evicted reopens it for writing; appends then work and survive a reopen.
func TestFileCacheTruncateSealed(t *testing.T) {
	files := NewFileCache(1)
	dir := t.TempDir()
	segs, batches := sealedSegments(t, dir, 2, files)
	readEvery(t, segs[1], batches[1]) // segment 0's file is evicted
	s := segs[0]
	cut := batches[0][10].BaseOffset()
	if _, err := s.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	if s.Sealed() || s.NextOffset() != cut {
		t.Fatalf("after truncation: sealed %v, next %d, want %d", s.Sealed(), s.NextOffset(), cut)
	}
	more := fill(t, s, 3)
	readEvery(t, s, append(batches[0][:10:10], more...))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	re, err := Open(dir, 0, Options{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	readEvery(t, re, append(batches[0][:10:10], more...))
}

// TestFileCacheRename: a segment renamed while the cache closed its file
// is reopened under its new name.
func TestFileCacheRename(t *testing.T) {
	files := NewFileCache(1)
	segs, batches := sealedSegments(t, t.TempDir(), 2, files)
	if err := segs[0].RenameSuffix(".swap"); err != nil {
		t.Fatal(err)
	}
	readEvery(t, segs[1], batches[1])
	readEvery(t, segs[0], batches[0])
	if err := segs[0].RenameSuffix(""); err != nil {
		t.Fatal(err)
	}
	readEvery(t, segs[1], batches[1])
	readEvery(t, segs[0], batches[0])
}

// TestFileCacheConcurrentReads: readers of many segments through a small
// cache, with evictions all the time, read the right bytes (run with
// -race).
func TestFileCacheConcurrentReads(t *testing.T) {
	files := NewFileCache(2)
	segs, batches := sealedSegments(t, t.TempDir(), 8, files)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 300 {
				i := rng.IntN(len(segs))
				b := batches[i][rng.IntN(len(batches[i]))]
				sl, err := segs[i].Read(b.BaseOffset(), 1, -1)
				if err != nil {
					t.Error(err)
					return
				}
				buf := make([]byte, sl.Len)
				_, err = sl.File.ReadAt(buf, sl.Pos)
				sl.Release()
				if err != nil || !bytes.Equal(buf, b) {
					t.Errorf("segment %d offset %d: wrong bytes (%v)", i, b.BaseOffset(), err)
					return
				}
			}
		})
	}
	wg.Wait()
	if files.Len() > 2 {
		t.Fatalf("cache holds %d files", files.Len())
	}
}

// TestIndexFilesHoldNoDescriptor: a segment's index files are open only
// while written; an empty segment reopened without them gets them back,
// empty, since the tier's copier reads them.
func TestIndexFilesHoldNoDescriptor(t *testing.T) {
	dir := t.TempDir()
	before := openFDs(t)
	s, err := Create(dir, 0, Options{IndexIntervalBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t); n != before+1 {
		t.Fatalf("%d descriptors open for a new segment, want %d", n, before+1)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{s.IndexPath(), s.TimeIndexPath()} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	re, err := Open(dir, 0, Options{IndexIntervalBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	for _, p := range []string{re.IndexPath(), re.TimeIndexPath()} {
		if st, err := os.Stat(p); err != nil || st.Size() != 0 {
			t.Fatalf("index %s after reopening: %v", p, err)
		}
	}
	fill(t, re, 30)
	if err := re.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t); n != before+1 {
		t.Fatalf("%d descriptors open after appends and a flush, want %d", n, before+1)
	}
}
