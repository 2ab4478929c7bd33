package local

import (
	"bytes"
	"testing"

	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// benchLog opens a log of segments of segBytes and appends 1 KiB batches
// until it has rolled segments times.
func benchLog(b *testing.B, cfg Config, segBytes int64, segments int) (*Log, int64) {
	b.Helper()
	cfg.SegmentBytes = segBytes
	l, err := Open(b.TempDir(), cfg, quiet)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	value := bytes.Repeat([]byte{'x'}, 1000)
	for len(l.Segments()) <= segments {
		bt := record.NewBatch(record.BuildOptions{}, record.Record{Value: value})
		if _, err := l.AppendAsLeader([]record.Batch{bt}, AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	return l, l.LogEndOffset()
}

// BenchmarkAppend appends 1 KiB batches, rolling every 16 MiB.
func BenchmarkAppend(b *testing.B) {
	l, _ := benchLog(b, Config{}, 16<<20, 0)
	value := bytes.Repeat([]byte{'x'}, 1000)
	bt := record.NewBatch(record.BuildOptions{}, record.Record{Value: value})
	b.SetBytes(int64(len(bt)))
	b.ResetTimer()
	for range b.N {
		c := append(record.Batch(nil), bt...)
		if _, err := l.AppendAsLeader([]record.Batch{c}, AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadSealed reads one batch at offsets spread over 200 sealed
// segments of 64 KiB, with every file open (no FileCache).
func BenchmarkReadSealed(b *testing.B) { benchReadSealed(b, nil) }

// BenchmarkReadSealedCached is BenchmarkReadSealed through a FileCache that
// holds every segment's file.
func BenchmarkReadSealedCached(b *testing.B) { benchReadSealed(b, segment.NewFileCache(1024)) }

// BenchmarkReadSealedEvicting is BenchmarkReadSealed through a FileCache of
// 16 files: nearly every read opens its segment's file again.
func BenchmarkReadSealedEvicting(b *testing.B) { benchReadSealed(b, segment.NewFileCache(16)) }

func benchReadSealed(b *testing.B, files *segment.FileCache) {
	l, leo := benchLog(b, Config{Files: files}, 64<<10, 200)
	b.ResetTimer()
	for i := range b.N {
		off := int64(i*7919) % leo
		sl, err := l.Read(off, 1, -1)
		if err != nil || sl.Len == 0 {
			b.Fatal(off, err)
		}
		sl.Release()
	}
}
