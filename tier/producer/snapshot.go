package producer

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"

	"github.com/strata-broker/strata/tier/segment"
)

// ErrCorruptSnapshot: a snapshot file that does not parse or whose CRC does
// not match. The log then falls back to an older snapshot or a full replay.
var ErrCorruptSnapshot = errors.New("producer: corrupt snapshot")

// Snapshot layout constants (see the package doc). Version 2 added each
// producer's transaction fields; version 1 files still load.
const (
	snapshotVersion   = 2
	snapshotVersionV1 = 1
	headerBytes       = 2 + 4 + 4
	producerBytesV1   = 8 + 2 + 1
	producerBytes     = 8 + 2 + 4 + 8 + 8 + 1
	batchBytes        = 4 + 4 + 8 + 8 + 8
	crcFieldOffset    = 2
	crcCoveredOffset  = 6
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode serializes the state in the snapshot layout (version 2).
func (s *State) encode() []byte {
	pids := make([]int64, 0, len(s.producers))
	size := headerBytes
	for pid, e := range s.producers {
		pids = append(pids, pid)
		size += producerBytes + len(e.batches)*batchBytes
	}
	slices.SortFunc(pids, cmp.Compare)
	be := binary.BigEndian
	buf := make([]byte, headerBytes, size)
	be.PutUint16(buf, snapshotVersion)
	be.PutUint32(buf[crcCoveredOffset:], uint32(len(pids)))
	for _, pid := range pids {
		e := s.producers[pid]
		buf = be.AppendUint64(buf, uint64(pid))
		buf = be.AppendUint16(buf, uint16(e.epoch))
		buf = be.AppendUint32(buf, uint32(e.coordEpoch))
		buf = be.AppendUint64(buf, uint64(e.txnFirst))
		buf = be.AppendUint64(buf, uint64(e.lastTs))
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

// decode parses a snapshot of version 1 or 2; it never panics on bad
// input.
func decode(buf []byte) (*State, error) {
	be := binary.BigEndian
	if len(buf) < headerBytes {
		return nil, fmt.Errorf("%d bytes is shorter than the header: %w", len(buf), ErrCorruptSnapshot)
	}
	version := be.Uint16(buf)
	if version != snapshotVersion && version != snapshotVersionV1 {
		return nil, fmt.Errorf("unknown version %d: %w", version, ErrCorruptSnapshot)
	}
	if stored, computed := be.Uint32(buf[crcFieldOffset:]), crc32.Checksum(buf[crcCoveredOffset:], castagnoli); stored != computed {
		return nil, fmt.Errorf("crc mismatch: stored %08x, computed %08x: %w", stored, computed, ErrCorruptSnapshot)
	}
	pBytes, minBatches := producerBytes, 0
	if version == snapshotVersionV1 {
		pBytes, minBatches = producerBytesV1, 1
	}
	n := be.Uint32(buf[crcCoveredOffset:])
	rest := buf[headerBytes:]
	if uint64(n)*uint64(pBytes+minBatches*batchBytes) > uint64(len(rest)) {
		return nil, fmt.Errorf("%d producers cannot fit in %d bytes: %w", n, len(rest), ErrCorruptSnapshot)
	}
	s := &State{producers: make(map[int64]*entry, n)}
	prev := int64(-1)
	for i := uint32(0); i < n; i++ {
		if len(rest) < pBytes {
			return nil, fmt.Errorf("producer %d truncated: %w", i, ErrCorruptSnapshot)
		}
		pid := int64(be.Uint64(rest))
		e := newEntry(int16(be.Uint16(rest[8:])))
		if version != snapshotVersionV1 {
			e.coordEpoch = int32(be.Uint32(rest[10:]))
			e.txnFirst = int64(be.Uint64(rest[14:]))
			e.lastTs = int64(be.Uint64(rest[22:]))
		}
		nb := int(rest[pBytes-1])
		rest = rest[pBytes:]
		if nb < minBatches || nb > MaxCachedBatches || len(rest) < nb*batchBytes {
			return nil, fmt.Errorf("producer %d: bad batch count %d: %w", pid, nb, ErrCorruptSnapshot)
		}
		if pid < 0 || pid <= prev {
			return nil, fmt.Errorf("producer id %d negative or not after %d: %w", pid, prev, ErrCorruptSnapshot)
		}
		if e.txnFirst < noTxn || e.coordEpoch < -1 {
			return nil, fmt.Errorf("producer %d: bad transaction first offset %d or coordinator epoch %d: %w",
				pid, e.txnFirst, e.coordEpoch, ErrCorruptSnapshot)
		}
		prev = pid
		e.batches = make([]BatchMeta, nb, MaxCachedBatches)
		for j := range e.batches {
			e.batches[j] = BatchMeta{
				ProducerID:   pid,
				Epoch:        e.epoch,
				FirstSeq:     int32(be.Uint32(rest)),
				LastSeq:      int32(be.Uint32(rest[4:])),
				FirstOffset:  int64(be.Uint64(rest[8:])),
				LastOffset:   int64(be.Uint64(rest[16:])),
				MaxTimestamp: int64(be.Uint64(rest[24:])),
			}
			rest = rest[batchBytes:]
		}
		if version == snapshotVersionV1 {
			e.lastTs = e.batches[nb-1].MaxTimestamp
		}
		if e.txnFirst != noTxn {
			if _, dup := slices.BinarySearchFunc(s.ongoing, e.txnFirst, func(t txnSpan, first int64) int { return cmp.Compare(t.first, first) }); dup {
				return nil, fmt.Errorf("producer %d: transaction first offset %d is another producer's: %w", pid, e.txnFirst, ErrCorruptSnapshot)
			}
			s.startTxn(pid, e.txnFirst)
		}
		s.producers[pid] = e
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%d trailing bytes: %w", len(rest), ErrCorruptSnapshot)
	}
	return s, nil
}

// WriteSnapshot writes the state to path atomically (temporary file,
// fsync, rename, directory fsync).
func (s *State) WriteSnapshot(path string) error {
	if err := segment.WriteFileAtomic(path, s.encode()); err != nil {
		return fmt.Errorf("write producer snapshot: %w", err)
	}
	return nil
}

// LoadSnapshot reads a snapshot written by WriteSnapshot. A damaged file
// yields an error wrapping ErrCorruptSnapshot.
func LoadSnapshot(path string) (*State, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load producer snapshot: %w", err)
	}
	s, err := decode(buf)
	if err != nil {
		return nil, fmt.Errorf("load producer snapshot %s: %w", path, err)
	}
	return s, nil
}
