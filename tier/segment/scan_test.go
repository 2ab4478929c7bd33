package segment

import (
	"bytes"
	"io"
	"testing"

	"github.com/strata-broker/strata/tier/record"
)

// countingReaderAt counts the reads and bytes a scanner asks for.
type countingReaderAt struct {
	r            io.ReaderAt
	reads, bytes int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	c.bytes += len(p)
	return c.r.ReadAt(p, off)
}

// TestScannerReadsHeadersAloneBehindLargeBatches: behind large batches a
// scan reads each header alone, behind small ones a window at a time, and
// either way it yields every header.
func TestScannerReadsHeadersAloneBehindLargeBatches(t *testing.T) {
	var file []byte
	var want []int64
	add := func(b record.Batch) {
		want = append(want, int64(len(file)))
		file = append(file, b...)
	}
	next := int64(0)
	for range 4 { // large batches: 40 KiB values
		b := record.NewBatch(record.BuildOptions{BaseOffset: next}, record.Record{Value: bytes.Repeat([]byte{'x'}, 40<<10)})
		add(b)
		next = b.LastOffset() + 1
	}
	largeEnd := len(want)
	for range 200 { // then small ones
		b := testBatch(next, 1, 1000)
		add(b)
		next = b.LastOffset() + 1
	}
	c := &countingReaderAt{r: bytes.NewReader(file)}
	sc := newScanner(c, 0, int64(len(file)))
	var got []int64
	readsAfterLarge, bytesAfterLarge := 0, 0
	for {
		h, err := sc.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Pos)
		if len(got) == largeEnd {
			readsAfterLarge, bytesAfterLarge = c.reads, c.bytes
		}
	}
	if len(got) != len(want) {
		t.Fatalf("scanned %d headers, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("header %d at %d, want %d", i, got[i], want[i])
		}
	}
	if readsAfterLarge != largeEnd || bytesAfterLarge != largeEnd*record.HeaderSize {
		t.Fatalf("large batches: %d reads of %d bytes, want %d of %d", readsAfterLarge, bytesAfterLarge, largeEnd, largeEnd*record.HeaderSize)
	}
	smallBytes := len(file) - int(want[largeEnd])
	if small := c.reads - readsAfterLarge; small > smallBytes/scanWindow+2 {
		t.Fatalf("small batches took %d reads for %d bytes", small, smallBytes)
	}
}

// BenchmarkReadLargeBatches: a follower-sized read (1 MiB) over 128 KiB
// batches, which locates the first batch and walks eight headers.
func BenchmarkReadLargeBatches(b *testing.B) {
	s, err := Create(b.TempDir(), 0, Options{IndexIntervalBytes: 4096})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	next := int64(0)
	for range 64 {
		bt := record.NewBatch(record.BuildOptions{BaseOffset: next}, record.Record{Value: bytes.Repeat([]byte{'x'}, 128<<10)})
		if err := s.Append(bt); err != nil {
			b.Fatal(err)
		}
		next = bt.LastOffset() + 1
	}
	b.ResetTimer()
	for i := range b.N {
		sl, err := s.Read(int64(i%56), 1<<20, -1)
		if err != nil || sl.Len == 0 {
			b.Fatal(err)
		}
		sl.Release()
	}
}

// BenchmarkAppend appends 1 KiB batches to one segment.
func BenchmarkAppend(b *testing.B) {
	s, err := Create(b.TempDir(), 0, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	value := bytes.Repeat([]byte{'x'}, 1000)
	bt := record.NewBatch(record.BuildOptions{}, record.Record{Value: value})
	b.SetBytes(int64(len(bt)))
	b.ResetTimer()
	for i := range b.N {
		bt.SetBaseOffset(int64(i))
		if err := s.Append(bt); err != nil {
			b.Fatal(err)
		}
	}
}
