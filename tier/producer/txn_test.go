package producer

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-broker/strata/tier/segment"
)

// txnOp is one step of a transactional log: a batch of n records of pid
// (transactional unless plain), or a marker of pid (commit or abort).
type txnOp struct {
	pid    int64
	n      int32 // records; 0 for a marker
	plain  bool
	commit bool
}

func data(pid int64, n int32) txnOp  { return txnOp{pid: pid, n: n} }
func plain(pid int64, n int32) txnOp { return txnOp{pid: pid, n: n, plain: true} }
func commit(pid int64) txnOp         { return txnOp{pid: pid, commit: true} }
func abort(pid int64) txnOp          { return txnOp{pid: pid} }
func (o txnOp) marker() bool         { return o.n == 0 }
func (o txnOp) records() int64       { return max(int64(o.n), 1) }

// txnLog applies ops to a fresh state as the log would, checking each
// as leader, and returns the state, the completed transactions and the
// offset after the last op. Sequences continue per producer.
func txnLog(t *testing.T, ops []txnOp) (*State, []CompletedTxn, int64) {
	t.Helper()
	s := NewState()
	var done []CompletedTxn
	seq := map[int64]int32{}
	off := int64(0)
	for i, o := range ops {
		if o.marker() {
			m := MarkerMeta{ProducerID: o.pid, Epoch: 0, CoordinatorEpoch: 1, Commit: o.commit, Offset: off, Timestamp: off}
			if err := s.CheckMarker(m); err != nil {
				t.Fatalf("op %d: %v", i, err)
			}
			if c := s.ApplyMarker(m); c != nil {
				done = append(done, *c)
			}
		} else {
			m := meta(o.pid, 0, seq[o.pid], o.n, off)
			m.Transactional = !o.plain
			if dup, err := s.Check(m); err != nil || dup != nil {
				t.Fatalf("op %d: dup %v err %v", i, dup, err)
			}
			s.Update(m)
			seq[o.pid] += o.n
		}
		off += o.records()
	}
	return s, done, off
}

// TestLastStableOffset is the LSO arithmetic: min(first unstable, hw),
// where a completed transaction holds the LSO until the high watermark
// passes its marker.
func TestLastStableOffset(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ops       []txnOp
		hw        int64
		unstable  int64 // -1: none; counts completed transactions until the hw update
		lso       int64
		lsoPruned int64 // after OnHighWatermarkUpdated(hw)
	}{
		{"no transactions", []txnOp{plain(1, 5), plain(2, 3)}, 8, -1, 8, 8},
		{"no transactions, hw behind", []txnOp{plain(1, 5)}, 3, -1, 3, 3},
		{"open at 0", []txnOp{data(1, 5)}, 5, 0, 0, 0},
		{"open after plain data", []txnOp{plain(2, 4), data(1, 2)}, 6, 4, 4, 4},
		{"open, hw below its start", []txnOp{plain(2, 4), data(1, 2)}, 2, 4, 2, 2},
		{"committed, marker replicated", []txnOp{data(1, 3), commit(1)}, 4, 0, 4, 4},
		{"committed, marker not replicated", []txnOp{data(1, 3), commit(1)}, 3, 0, 0, 0},
		{"aborted, marker not replicated", []txnOp{data(1, 3), abort(1)}, 2, 0, 0, 0},
		{"two open, oldest wins", []txnOp{data(1, 2), data(2, 2), data(1, 2)}, 6, 0, 0, 0},
		{"older done, younger open", []txnOp{data(1, 2), data(2, 2), commit(1)}, 5, 0, 2, 2},
		{"younger done, older open", []txnOp{data(1, 2), data(2, 2), commit(2)}, 5, 0, 0, 0},
		{"both done", []txnOp{data(1, 2), data(2, 2), abort(2), commit(1)}, 6, 0, 6, 6},
		{"both done, one marker above hw", []txnOp{data(1, 2), data(2, 2), abort(2), commit(1)}, 5, 0, 0, 0},
		{"second transaction of a producer", []txnOp{data(1, 2), commit(1), data(1, 2)}, 5, 0, 3, 3},
		{"empty transaction marker", []txnOp{plain(2, 2), commit(1)}, 3, -1, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _ := txnLog(t, tc.ops)
			got, ok := s.FirstUnstableOffset()
			if !ok {
				got = -1
			}
			if got != tc.unstable {
				t.Errorf("first unstable %d, want %d", got, tc.unstable)
			}
			if lso := s.LastStableOffset(tc.hw); lso != tc.lso {
				t.Errorf("LSO at hw %d: %d, want %d", tc.hw, lso, tc.lso)
			}
			s.OnHighWatermarkUpdated(tc.hw)
			if lso := s.LastStableOffset(tc.hw); lso != tc.lsoPruned {
				t.Errorf("LSO after the hw update: %d, want %d", lso, tc.lsoPruned)
			}
		})
	}
}

// TestAbortedTxnEntries is the aborted-index arithmetic: each completed
// transaction's span and the LSO recorded with it (the first offset of
// another producer's open transaction, else the marker offset + 1).
func TestAbortedTxnEntries(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []txnOp
		want []CompletedTxn
	}{
		{"single abort", []txnOp{data(1, 3), abort(1)},
			[]CompletedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 3, LastStableOffset: 4, Aborted: true}}},
		{"commit is not aborted", []txnOp{data(1, 3), commit(1)},
			[]CompletedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 3, LastStableOffset: 4}}},
		{"first batch sets the start", []txnOp{plain(2, 2), data(1, 3), data(1, 1), abort(1)},
			[]CompletedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 6, LastStableOffset: 7, Aborted: true}}},
		{"another producer open before", []txnOp{data(2, 2), data(1, 3), abort(1)},
			[]CompletedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 5, LastStableOffset: 0, Aborted: true}}},
		{"another producer open after", []txnOp{data(1, 3), data(2, 2), abort(1)},
			[]CompletedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 5, LastStableOffset: 3, Aborted: true}}},
		{"interleaved, both abort", []txnOp{data(1, 2), data(2, 2), data(1, 1), abort(1), data(2, 1), abort(2)},
			[]CompletedTxn{
				{ProducerID: 1, FirstOffset: 0, LastOffset: 5, LastStableOffset: 2, Aborted: true},
				{ProducerID: 2, FirstOffset: 2, LastOffset: 7, LastStableOffset: 8, Aborted: true},
			}},
		{"an unreplicated one does not count", []txnOp{data(1, 2), abort(1), data(2, 2), abort(2)},
			[]CompletedTxn{
				{ProducerID: 1, FirstOffset: 0, LastOffset: 2, LastStableOffset: 3, Aborted: true},
				{ProducerID: 2, FirstOffset: 3, LastOffset: 5, LastStableOffset: 6, Aborted: true},
			}},
		{"three producers, middle one ends", []txnOp{data(1, 1), data(2, 1), data(3, 1), abort(2)},
			[]CompletedTxn{{ProducerID: 2, FirstOffset: 1, LastOffset: 3, LastStableOffset: 0, Aborted: true}}},
		{"empty transactions complete nothing", []txnOp{abort(1), commit(2), data(1, 1), commit(1), abort(1)},
			[]CompletedTxn{{ProducerID: 1, FirstOffset: 2, LastOffset: 3, LastStableOffset: 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got, _ := txnLog(t, tc.ops)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("completed\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	// The entries of a run of aborts go into a transaction index as they are.
	_, done, _ := txnLog(t, []txnOp{data(1, 2), data(2, 2), data(1, 1), abort(1), data(2, 1), abort(2)})
	x := segment.NewTxnIndex(filepath.Join(t.TempDir(), "0.txnindex"), 0)
	for _, c := range done {
		if err := x.Append(c.AbortedTxn()); err != nil {
			t.Fatal(err)
		}
	}
	// A fetch of [0, 3) sees both (pid 1's LSO 2 < 3, so the search goes on).
	if r := x.CollectAbortedTxns(0, 3); len(r.Aborted) != 2 || !r.Complete {
		t.Fatalf("collect: %+v", r)
	}
}

func TestTxnChecks(t *testing.T) {
	s, _, off := txnLog(t, []txnOp{data(1, 2)})
	// A non-transactional batch while the transaction is open.
	m := meta(1, 0, 2, 1, off)
	if _, err := s.Check(m); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("plain batch in a transaction: %v", err)
	}
	m.Transactional = true
	if dup, err := s.Check(m); err != nil || dup != nil {
		t.Fatalf("transactional batch: %v %v", dup, err)
	}
	// Through a Pending overlay: a transactional batch opens the
	// transaction for the later batches of the same append.
	p := s.Begin()
	tm := meta(5, 0, 0, 1, off)
	tm.Transactional = true
	p.Update(tm)
	if _, err := p.Check(meta(5, 0, 1, 1, off+1)); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("staged plain batch after a staged transactional one: %v", err)
	}
	if _, ok := s.OngoingTxn(5); ok {
		t.Fatal("staging opened a transaction")
	}
	// Markers: epoch and coordinator epoch fencing.
	mk := MarkerMeta{ProducerID: 1, Epoch: 0, CoordinatorEpoch: 3, Offset: off}
	if err := s.CheckMarker(mk); err != nil {
		t.Fatal(err)
	}
	if c := s.ApplyMarker(mk); c == nil || !c.Aborted || c.FirstOffset != 0 {
		t.Fatalf("abort: %+v", c)
	}
	if err := s.CheckMarker(MarkerMeta{ProducerID: 1, Epoch: 0, CoordinatorEpoch: 2}); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("stale coordinator: %v", err)
	}
	s.Update(meta(1, 2, 0, 1, off+1))
	if err := s.CheckMarker(MarkerMeta{ProducerID: 1, Epoch: 1, CoordinatorEpoch: 3}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("fenced producer's marker: %v", err)
	}
	if err := s.CheckMarker(MarkerMeta{ProducerID: 99, Epoch: 0}); err != nil {
		t.Fatalf("unknown producer's marker: %v", err)
	}
	if c := s.ApplyMarker(MarkerMeta{ProducerID: 99, Epoch: 0}); c != nil || s.Len() != 1 {
		t.Fatalf("unknown producer's marker: %+v, %d producers", c, s.Len())
	}
	// A marker that bumps the epoch (KIP-890) forgets the cached batches:
	// the next batch of that epoch starts at 0.
	s.ApplyMarker(MarkerMeta{ProducerID: 1, Epoch: 3, CoordinatorEpoch: 3, Commit: true, Offset: off + 2})
	if _, ok := s.Last(1); ok {
		t.Fatal("batches survived the epoch bump")
	}
	if _, err := s.Check(meta(1, 3, 1, 1, off+3)); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("epoch bumped by a marker, seq 1: %v", err)
	}
	if _, err := s.Check(meta(1, 3, 0, 1, off+3)); err != nil {
		t.Fatalf("epoch bumped by a marker, seq 0: %v", err)
	}
}

func TestExpireKeepsOpenTransactions(t *testing.T) {
	s, _, _ := txnLog(t, []txnOp{data(1, 1), plain(2, 1)}) // timestamps 1000, 1001
	if n := s.ExpireBefore(5000); n != 1 || s.Len() != 1 {
		t.Fatalf("expired %d, left %d", n, s.Len())
	}
	if _, ok := s.OngoingTxn(1); !ok {
		t.Fatal("the open transaction was expired")
	}
	// Once it ends, the marker's timestamp counts.
	s.ApplyMarker(MarkerMeta{ProducerID: 1, Commit: true, Offset: 2, Timestamp: 6000})
	if n := s.ExpireBefore(5000); n != 0 {
		t.Fatal("expired by its batches' timestamps despite a newer marker")
	}
	if n := s.ExpireBefore(7000); n != 1 || s.Len() != 0 {
		t.Fatalf("expired %d, left %d", n, s.Len())
	}
}

// TestSnapshotKeepsTransactions: the open transactions, coordinator epoch
// and an empty batch cache survive a snapshot, so the LSO after a restart
// is the one before it.
func TestSnapshotKeepsTransactions(t *testing.T) {
	s, _, off := txnLog(t, []txnOp{plain(3, 2), data(1, 2), data(2, 2), abort(1), data(2, 1)})
	s.ApplyMarker(MarkerMeta{ProducerID: 3, Epoch: 4, CoordinatorEpoch: 7, Commit: true, Offset: off})
	path := filepath.Join(t.TempDir(), "00000000000000000009.snapshot")
	if err := s.WriteSnapshot(path); err != nil {
		t.Fatal(err)
	}
	got, err := LoadSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastStableOffset(100) != 4 || s.LastStableOffset(100) != 4 {
		t.Fatalf("LSO after reload %d, before %d", got.LastStableOffset(100), s.LastStableOffset(100))
	}
	if first, ok := got.OngoingTxn(2); !ok || first != 4 || got.OngoingTxns() != 1 {
		t.Fatalf("open transaction of 2: %d %v (%d open)", first, ok, got.OngoingTxns())
	}
	if err := got.CheckMarker(MarkerMeta{ProducerID: 3, Epoch: 4, CoordinatorEpoch: 6}); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("coordinator epoch lost: %v", err)
	}
	if _, ok := got.Last(3); ok {
		t.Fatal("emptied batch cache came back")
	}
	if string(got.encode()) != string(s.encode()) {
		t.Fatal("re-encoding differs")
	}
}

// encodeV1 writes the state in the version 1 layout (every producer must
// have at least one batch), to check that old snapshots still load.
func encodeV1(s *State) []byte {
	be := binary.BigEndian
	buf := make([]byte, headerBytes)
	be.PutUint16(buf, snapshotVersionV1)
	pids := make([]int64, 0, len(s.producers))
	for pid := range s.producers {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	be.PutUint32(buf[crcCoveredOffset:], uint32(len(pids)))
	for _, pid := range pids {
		e := s.producers[pid]
		buf = be.AppendUint64(buf, uint64(pid))
		buf = be.AppendUint16(buf, uint16(e.epoch))
		buf = append(buf, byte(len(e.batches)))
		for _, b := range e.batches {
			buf = be.AppendUint32(buf, uint32(b.FirstSeq))
			buf = be.AppendUint32(buf, uint32(b.LastSeq))
			buf = be.AppendUint64(buf, uint64(b.FirstOffset))
			buf = be.AppendUint64(buf, uint64(b.LastOffset))
			buf = be.AppendUint64(buf, uint64(b.MaxTimestamp))
		}
	}
	be.PutUint32(buf[crcFieldOffset:], crc32.Checksum(buf[crcCoveredOffset:], castagnoli))
	return buf
}

func TestSnapshotReadsVersion1(t *testing.T) {
	s := NewState()
	for pid := int64(1); pid <= 3; pid++ {
		for i := range 3 {
			s.Update(meta(pid, int16(pid), int32(i), 1, pid*10+int64(i)))
		}
	}
	got, err := decode(encodeV1(s))
	if err != nil {
		t.Fatal(err)
	}
	if string(got.encode()) != string(s.encode()) {
		t.Fatal("version 1 does not load as the same state")
	}
	if got.OngoingTxns() != 0 || got.producers[2].coordEpoch != -1 || got.producers[2].lastTs != 1022 {
		t.Fatalf("defaults: %+v", got.producers[2])
	}
	// Version 1 has no empty batch caches.
	bad := encodeV1(NewState())
	bad = append(bad, make([]byte, producerBytesV1)...)
	binary.BigEndian.PutUint32(bad[crcCoveredOffset:], 1)
	binary.BigEndian.PutUint32(bad[crcFieldOffset:], crc32.Checksum(bad[crcCoveredOffset:], castagnoli))
	if _, err := decode(bad); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("v1 producer without batches: %v", err)
	}
}

// TestProducers: each producer's epoch, last sequence and timestamp,
// coordinator epoch and open transaction, as DescribeProducers shows them.
func TestProducers(t *testing.T) {
	s, _, _ := txnLog(t, []txnOp{data(1, 2), plain(2, 3), data(3, 1), commit(3)})
	got := s.Producers()
	want := []Active{
		{ProducerID: 1, Epoch: 0, LastSequence: 1, LastTimestamp: 1000, CoordinatorEpoch: -1, TxnStartOffset: 0},
		{ProducerID: 2, Epoch: 0, LastSequence: 2, LastTimestamp: 1002, CoordinatorEpoch: -1, TxnStartOffset: -1},
	}
	if len(got) != 3 || !slices.Equal(got[:2], want) {
		t.Fatalf("producers %+v, want %+v first", got, want)
	}
	if p := got[2]; p.ProducerID != 3 || p.TxnStartOffset != -1 || p.CoordinatorEpoch != 1 {
		t.Fatalf("committed producer %+v", p)
	}
}
