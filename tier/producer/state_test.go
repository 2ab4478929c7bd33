package producer

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// meta makes the metadata of a batch of n records of producer pid.
func meta(pid int64, epoch int16, firstSeq int32, n int32, firstOffset int64) BatchMeta {
	return BatchMeta{ProducerID: pid, Epoch: epoch, FirstSeq: firstSeq, LastSeq: firstSeq + n - 1,
		FirstOffset: firstOffset, LastOffset: firstOffset + int64(n) - 1, MaxTimestamp: 1000 + firstOffset}
}

func mustAccept(t *testing.T, s *State, m BatchMeta) {
	t.Helper()
	dup, err := s.Check(m)
	if err != nil || dup != nil {
		t.Fatalf("check %+v: dup %v err %v", m, dup, err)
	}
	s.Update(m)
}

func TestCheck(t *testing.T) {
	s := NewState()
	// Unknown producers are accepted at any sequence (KIP-360).
	mustAccept(t, s, meta(7, 0, 42, 3, 0))
	// Next in sequence.
	off := int64(3)
	for seq := int32(45); seq < 45+6*2; seq += 2 {
		mustAccept(t, s, meta(7, 0, seq, 2, off))
		off += 2
	}
	// The last 5 batches are duplicates, with their original offsets.
	for i := range 5 {
		seq := int32(45 + (6-5+i)*2)
		dup, err := s.Check(meta(7, 0, seq, 2, 999))
		if err != nil || dup == nil || dup.FirstOffset != 3+int64(6-5+i)*2 {
			t.Fatalf("retry of seq %d: dup %+v err %v", seq, dup, err)
		}
	}
	// Older ones fall out of the cache and are out of order.
	if _, err := s.Check(meta(7, 0, 45, 2, 999)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("evicted retry: %v", err)
	}
	// A gap and a partial overlap are out of order.
	if _, err := s.Check(meta(7, 0, 58, 1, 999)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	if _, err := s.Check(meta(7, 0, 56, 2, 999)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("overlap: %v", err)
	}
	// A fenced epoch.
	mustAccept(t, s, meta(7, 3, 0, 1, off))
	if _, err := s.Check(meta(7, 2, 57, 1, 999)); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch: %v", err)
	}
	// A new epoch must start at 0, and forgets the old epoch's batches.
	if _, err := s.Check(meta(7, 4, 1, 1, 999)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("new epoch at 1: %v", err)
	}
	if last, _ := s.Last(7); last.Epoch != 3 || last.FirstSeq != 0 {
		t.Fatalf("last batch %+v", last)
	}
	// Sequences wrap at MaxInt32.
	mustAccept(t, s, meta(8, 0, math.MaxInt32-1, 2, 100))
	mustAccept(t, s, meta(8, 0, 0, 1, 102))
	if s.Len() != 2 {
		t.Fatalf("%d producers", s.Len())
	}
}

func TestPending(t *testing.T) {
	s := NewState()
	mustAccept(t, s, meta(1, 0, 0, 1, 0))
	p := s.Begin()
	for i, m := range []BatchMeta{meta(1, 0, 1, 1, 1), meta(1, 0, 2, 1, 2), meta(2, 0, 9, 1, 3)} {
		if dup, err := p.Check(m); err != nil || dup != nil {
			t.Fatalf("staged %d: %v %v", i, dup, err)
		}
		p.Update(m)
	}
	// A retry of a batch staged earlier in the same append is a duplicate.
	if dup, _ := p.Check(meta(1, 0, 2, 1, 50)); dup == nil || dup.FirstOffset != 2 {
		t.Fatalf("staged retry: %+v", dup)
	}
	if last, _ := s.Last(1); last.LastSeq != 0 || s.Len() != 1 {
		t.Fatalf("staging changed the state: %+v", last)
	}
}

func TestExpireBefore(t *testing.T) {
	s := NewState()
	s.Update(meta(1, 0, 0, 1, 0))   // ts 1000
	s.Update(meta(2, 0, 0, 1, 500)) // ts 1500
	s.Update(BatchMeta{ProducerID: -1})
	if n := s.ExpireBefore(1200); n != 1 || s.Len() != 1 {
		t.Fatalf("expired %d, left %d", n, s.Len())
	}
	if _, ok := s.Last(1); ok {
		t.Fatal("producer 1 survived")
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "00000000000000000100.snapshot")
	s := NewState()
	for pid := int64(1); pid <= 4; pid++ {
		for i := range int(pid) + 3 {
			s.Update(meta(pid, int16(pid), int32(i), 1, pid*100+int64(i)))
		}
	}
	if err := s.WriteSnapshot(path); err != nil {
		t.Fatal(err)
	}
	got, err := LoadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != s.Len() {
		t.Fatalf("loaded %d producers", got.Len())
	}
	for pid, e := range s.producers {
		g := got.producers[pid]
		if g == nil || g.epoch != e.epoch || len(g.batches) != len(e.batches) {
			t.Fatalf("producer %d: %+v vs %+v", pid, g, e)
		}
		for i := range e.batches {
			if g.batches[i] != e.batches[i] {
				t.Fatalf("producer %d batch %d: %+v vs %+v", pid, i, g.batches[i], e.batches[i])
			}
		}
	}
	empty := filepath.Join(dir, "empty.snapshot")
	if err := NewState().WriteSnapshot(empty); err != nil {
		t.Fatal(err)
	}
	if st, err := LoadSnapshot(empty); err != nil || st.Len() != 0 {
		t.Fatalf("empty snapshot: %v", err)
	}

	data, _ := os.ReadFile(path)
	data[len(data)-1] ^= 1
	_ = os.WriteFile(path, data, 0o644)
	if _, err := LoadSnapshot(path); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("flipped byte: %v", err)
	}
	_ = os.WriteFile(path, data[:5], 0o644)
	if _, err := LoadSnapshot(path); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("truncated: %v", err)
	}
}

// FuzzDecodeSnapshot checks that arbitrary snapshot bytes never panic,
// that whatever decodes as the current version re-encodes to the same
// bytes, and that a version 1 snapshot re-encodes to a stable version 2.
func FuzzDecodeSnapshot(f *testing.F) {
	s := NewState()
	s.Update(meta(5, 1, 0, 2, 10))
	f.Add(encodeV1(s))
	tm := meta(6, 0, 0, 1, 12)
	tm.Transactional = true
	s.Update(tm)
	s.ApplyMarker(MarkerMeta{ProducerID: 5, Epoch: 2, CoordinatorEpoch: 1, Commit: true, Offset: 13})
	f.Add(s.encode())
	f.Add(NewState().encode())
	f.Add([]byte{0, 1, 0, 0, 0, 0, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decode(data)
		if err != nil {
			return
		}
		enc := st.encode()
		if data[1] == snapshotVersion && string(enc) != string(data) {
			t.Fatalf("decode/encode mismatch")
		}
		again, err := decode(enc)
		if err != nil || string(again.encode()) != string(enc) {
			t.Fatalf("re-decode: %v", err)
		}
	})
}
