package local

import (
	"os"
	"testing"

	"github.com/strata-broker/strata/tier/segment"
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

// TestLogOpenFilesBounded: a log of many more sealed segments than its
// FileCache holds reads every batch correctly, before and after clean and
// unclean restarts, while the process keeps at most the active segment's
// file and the cache's open.
func TestLogOpenFilesBounded(t *testing.T) {
	const bound = 3
	dir := t.TempDir()
	before := openFDs(t)
	cfg := Config{SegmentBytes: 1024, IndexIntervalBytes: 256, Files: segment.NewFileCache(bound)}
	l, err := Open(dir, cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	batches := appendN(t, l, 400, 1000)
	// The roll flusher opens index files to sync them while it runs: stop
	// it, so that the counts see the log at rest.
	l.stopFlusher()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := len(l.Segments()); n < 10*bound {
		t.Fatalf("only %d segments", n)
	}
	check := func(what string) {
		t.Helper()
		if got := openFDs(t); got > before+1+bound {
			t.Fatalf("%s: %d descriptors open, want at most %d", what, got, before+1+bound)
		}
	}
	check("after appending")
	checkReads(t, l, batches, 0)
	check("after reading every segment")
	if ts, off := l.MaxTimestamp(); ts < 0 || off < 0 {
		t.Fatalf("MaxTimestamp = %d at %d", ts, off)
	}
	if off, _, ok := l.OffsetForTimestamp(batches[200].MaxTimestamp()); !ok || off > batches[200].LastOffset() {
		t.Fatalf("OffsetForTimestamp = %d, %v", off, ok)
	}
	check("after timestamp look-ups")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A clean restart loads every segment; an unclean one rescans.
	for _, clean := range []bool{true, false} {
		re, err := Open(dir, cfg, quiet)
		if err != nil {
			t.Fatal(err)
		}
		check("after reopening")
		checkReads(t, re, batches, 0)
		check("after reading the reopened log")
		if clean {
			re.closeUnclean()
		} else if err := re.Close(); err != nil {
			t.Fatal(err)
		}
	}

	// A truncation into a sealed segment whose file was evicted reopens
	// it for appends.
	re, err := Open(dir, cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	cut := batches[50]
	if err := re.TruncateTo(cut.BaseOffset()); err != nil {
		t.Fatal(err)
	}
	more := appendN(t, re, 100, 5000)
	checkReads(t, re, append(batches[:50:50], more...), 0)
	re.stopFlusher()
	if err := re.Flush(); err != nil {
		t.Fatal(err)
	}
	check("after truncating and appending")
}
