package segment

import (
	"bytes"
	"log/slog"
	"os"
	"slices"
	"testing"

	"github.com/strata-broker/strata/tier/record"
)

// closedSegment writes count batches into a fresh segment at base 0 and
// closes it, returning its directory and batches.
func closedSegment(t testing.TB, count, interval int) (string, []record.Batch) {
	t.Helper()
	dir := t.TempDir()
	s, err := Create(dir, 0, Options{IndexIntervalBytes: interval})
	if err != nil {
		t.Fatal(err)
	}
	var batches []record.Batch
	for i := range count {
		b := testBatch(s.NextOffset(), 1+i%3, int64(1000+i))
		if err := s.Append(b); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, batches
}

func appendToFile(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRecoverTornTail(t *testing.T) {
	for name, tail := range map[string]func(next record.Batch) []byte{
		"partial batch":  func(next record.Batch) []byte { return next[:len(next)/2] },
		"partial prefix": func(next record.Batch) []byte { return next[:7] },
		"bad crc": func(next record.Batch) []byte {
			b := slices.Clone(next)
			b[len(b)-1] ^= 0xff
			return b
		},
		"garbage": func(record.Batch) []byte { return bytes.Repeat([]byte{0xde, 0xad}, 300) },
		"huge length": func(next record.Batch) []byte {
			b := slices.Clone(next[:12])
			b[8] = 0x7f
			return b
		},
		"offset going back": func(record.Batch) []byte { return testBatch(3, 1, 0) },
	} {
		t.Run(name, func(t *testing.T) {
			dir, batches := closedSegment(t, 50, 128)
			path := FileName(dir, 0, LogSuffix)
			st, _ := os.Stat(path)
			good := st.Size()
			next := batches[len(batches)-1].LastOffset() + 1
			junk := tail(testBatch(next, 3, 5000))
			appendToFile(t, path, junk)

			s, err := Open(dir, 0, Options{IndexIntervalBytes: 128})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Open rebuilds by itself when the tail does not even frame;
			// either way Recover leaves exactly the intact batches.
			if _, err := s.Recover(); err != nil {
				t.Fatal(err)
			}
			if s.Size() != good || s.NextOffset() != next {
				t.Fatalf("size %d (want %d), next %d (want %d)", s.Size(), good, s.NextOffset(), next)
			}
			if st, _ := os.Stat(path); st.Size() != good {
				t.Fatalf("file not truncated: %d", st.Size())
			}
			if err := s.Append(testBatch(next, 2, 6000)); err != nil {
				t.Fatalf("append after recovery: %v", err)
			}
		})
	}
}

func TestRebuildDamagedIndexes(t *testing.T) {
	dir, _ := closedSegment(t, 80, 100)
	idx, tidx := FileName(dir, 0, IndexSuffix), FileName(dir, 0, TimeIndexSuffix)
	origIdx, _ := os.ReadFile(idx)
	origTidx, _ := os.ReadFile(tidx)
	if len(origIdx) == 0 || len(origTidx) == 0 {
		t.Fatal("indexes were not written")
	}
	damage := map[string]func(){
		"missing": func() { _ = os.Remove(idx); _ = os.Remove(tidx) },
		"torn":    func() { _ = os.WriteFile(idx, origIdx[:len(origIdx)-3], 0o644) },
		"not increasing": func() {
			b := slices.Clone(origIdx)
			copy(b[8:16], b[0:8])
			_ = os.WriteFile(idx, b, 0o644)
		},
		"past the end": func() {
			b := slices.Clone(origIdx)
			b[len(b)-4] = 0x7f
			_ = os.WriteFile(idx, b, 0o644)
		},
		"time past the end": func() {
			b := slices.Clone(origTidx)
			b[len(b)-4] = 0x7f
			_ = os.WriteFile(tidx, b, 0o644)
		},
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			fn()
			s, err := Open(dir, 0, Options{IndexIntervalBytes: 100})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			gotIdx, _ := os.ReadFile(idx)
			gotTidx, _ := os.ReadFile(tidx)
			if !bytes.Equal(gotIdx, origIdx) || !bytes.Equal(gotTidx, origTidx) {
				t.Fatalf("rebuilt indexes differ: %d/%d bytes vs %d/%d", len(gotIdx), len(gotTidx), len(origIdx), len(origTidx))
			}
		})
	}
}

// FuzzRecover writes a valid segment followed by arbitrary bytes (or
// arbitrary bytes alone) and checks that recovery keeps exactly the intact
// batches, leaves a readable segment, and is idempotent.
func FuzzRecover(f *testing.F) {
	valid := []byte(slices.Concat(testBatch(0, 2, 100), testBatch(2, 1, 200)))
	f.Add([]byte{}, true)
	f.Add(valid[:40], false)
	f.Add([]byte(testBatch(3, 4, 300)[:70]), true)
	f.Add(bytes.Repeat([]byte{0xff}, 100), true)
	f.Add(slices.Concat(valid, valid), false)
	defer func(orig func(*os.File) error) { datasync = orig }(datasync)
	datasync = func(*os.File) error { return nil } // durability is not under test
	quiet := slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, junk []byte, withPrefix bool) {
		dir := t.TempDir()
		content := junk
		if withPrefix {
			content = slices.Concat(valid, junk)
		}
		if err := os.WriteFile(FileName(dir, 0, LogSuffix), content, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, 0, Options{IndexIntervalBytes: 32, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Recover(); err != nil {
			t.Fatal(err)
		}
		kept := s.Size()
		if n, _ := record.ValidPrefix(content); int64(n) < kept {
			t.Fatalf("kept %d bytes, valid prefix is %d", kept, n)
		}
		if withPrefix && kept < int64(len(valid)) {
			t.Fatalf("lost the valid prefix: kept %d", kept)
		}
		for off := int64(0); off < s.NextOffset(); off++ {
			sl, err := s.Read(off, 1, -1)
			if err != nil {
				t.Fatalf("read %d: %v", off, err)
			}
			sl.Release()
		}
		if again, err := s.Recover(); err != nil || again != 0 || s.Size() != kept {
			t.Fatalf("second recovery: truncated %d, err %v", again, err)
		}
	})
}
