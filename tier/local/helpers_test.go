package local

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

var quiet = slog.New(slog.DiscardHandler)

// openLog opens dir with cfg, closing it at the end of the test. Without
// a FileCache in cfg the log gets one of two files, so that the tests
// read sealed segments whose files were closed and reopened.
func openLog(t *testing.T, dir string, cfg Config) *Log {
	t.Helper()
	if cfg.Files == nil {
		cfg.Files = segment.NewFileCache(2)
	}
	l, err := Open(dir, cfg, quiet)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// closeUnclean simulates a crash: the flusher stops and the files are
// closed without the final flush, snapshot, checkpoint or marker.
func (l *Log) closeUnclean() {
	l.stopFlusher()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	_ = l.closeSegments()
}

// plain builds a batch of n records without a producer id.
func plain(n int, ts int64) record.Batch {
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{TimestampDelta: int64(i), Value: fmt.Appendf(nil, "v%d-%d", ts, i)}
	}
	return record.NewBatch(record.BuildOptions{FirstTimestamp: ts}, recs...)
}

// followerBatches builds n batches of two records at leader epoch 4, as a
// follower fetches them: offsets from 0 on, with a gap of five before
// each index in gapsBefore (as after compaction on the leader).
func followerBatches(n int, gapsBefore ...int) []record.Batch {
	var batches []record.Batch
	next := int64(0)
	for i := range n {
		b := plain(2, int64(i))
		if slices.Contains(gapsBefore, i) {
			next += 5
		}
		b.SetBaseOffset(next)
		b.SetPartitionLeaderEpoch(4)
		batches = append(batches, b)
		next = b.LastOffset() + 1
	}
	return batches
}

// idem builds a batch of n records of an idempotent producer, stamped with
// the real time (producer expiration looks at batch timestamps).
func idem(pid int64, epoch int16, seq int32, n int) record.Batch {
	return idemAt(pid, epoch, seq, n, time.Now().UnixMilli())
}

// idemAt is idem with the given create time.
func idemAt(pid int64, epoch int16, seq int32, n int, ts int64) record.Batch {
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Value: fmt.Appendf(nil, "p%d-%d-%d", pid, seq, i)}
	}
	return record.NewBatch(record.BuildOptions{FirstTimestamp: ts, Idempotent: true,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq}, recs...)
}

// appendN appends count plain batches of 1..5 records and returns copies of
// them as stored (offsets assigned).
func appendN(t *testing.T, l *Log, count int, ts int64) []record.Batch {
	t.Helper()
	var out []record.Batch
	for i := range count {
		b := plain(1+i%5, ts+int64(i)*10)
		if _, err := l.AppendAsLeader([]record.Batch{b}, AppendOptions{LeaderEpoch: 3}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		out = append(out, b)
	}
	return out
}

// readAll reads a Slice's batches.
func readSlice(t *testing.T, sl segment.Slice) []record.Batch {
	t.Helper()
	defer sl.Release()
	if sl.Len == 0 {
		return nil
	}
	buf := make([]byte, sl.Len)
	if _, err := sl.File.ReadAt(buf, sl.Pos); err != nil {
		t.Fatalf("read slice: %v", err)
	}
	bs, err := record.Split(buf)
	if err != nil {
		t.Fatalf("split: %v", err)
	}
	return bs
}

// checkReads verifies that reading any offset in [from, LEO) yields the
// stored batch holding it.
func checkReads(t *testing.T, l *Log, batches []record.Batch, from int64) {
	t.Helper()
	for _, want := range batches {
		if want.LastOffset() < from {
			continue
		}
		for _, off := range []int64{max(from, want.BaseOffset()), want.LastOffset()} {
			sl, err := l.Read(off, 1, -1)
			if err != nil {
				t.Fatalf("read %d: %v", off, err)
			}
			got := readSlice(t, sl)
			if len(got) != 1 || !bytes.Equal(got[0], want) {
				t.Fatalf("read %d: got %d batches, not the one at %d", off, len(got), want.BaseOffset())
			}
		}
	}
}

// logFile is the path of a segment's .log file.
func logFile(dir string, base int64) string { return segment.FileName(dir, base, segment.LogSuffix) }

// appendBytes appends raw bytes to a file.
func appendBytes(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}

// flipByte inverts one byte of a file in place.
func flipByte(t *testing.T, path string, pos int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, pos); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, pos); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}
