package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"os"
	"slices"
	"sync"
)

// AbortedTxnSize is the size of one .txnindex entry:
// version int16 | producerId int64 | firstOffset int64 | lastOffset int64 |
// lastStableOffset int64, big-endian.
const AbortedTxnSize = 2 + 8 + 8 + 8 + 8

// abortedTxnVersion is the only entry version Kafka writes and reads.
const abortedTxnVersion = 0

// ErrBadAbortedTxn: an entry that cannot go into a transaction index
// (negative or inverted offsets, or a last offset that does not increase).
var ErrBadAbortedTxn = errors.New("segment: bad aborted transaction")

// AbortedTxn is one entry of a transaction index: producer ProducerID's
// transaction that started at FirstOffset was aborted by the marker at
// LastOffset, and the log's last stable offset right after the abort was
// LastStableOffset.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// encode writes the entry in the file layout into b (AbortedTxnSize bytes).
func (a AbortedTxn) encode(b []byte) {
	be := binary.BigEndian
	be.PutUint16(b, abortedTxnVersion)
	be.PutUint64(b[2:], uint64(a.ProducerID))
	be.PutUint64(b[10:], uint64(a.FirstOffset))
	be.PutUint64(b[18:], uint64(a.LastOffset))
	be.PutUint64(b[26:], uint64(a.LastStableOffset))
}

// decodeAbortedTxn parses one entry; ok is false for an unknown version.
func decodeAbortedTxn(b []byte) (AbortedTxn, bool) {
	be := binary.BigEndian
	a := AbortedTxn{
		ProducerID:       int64(be.Uint64(b[2:])),
		FirstOffset:      int64(be.Uint64(b[10:])),
		LastOffset:       int64(be.Uint64(b[18:])),
		LastStableOffset: int64(be.Uint64(b[26:])),
	}
	return a, be.Uint16(b) == abortedTxnVersion
}

// TxnIndexSearchResult is what CollectAbortedTxns found in one index:
// the aborted transactions overlapping the searched range and whether the
// search is complete. An incomplete search must go on into the next
// segment's index, since a transaction aborted there may still overlap
// the range.
type TxnIndexSearchResult struct {
	Aborted  []AbortedTxn
	Complete bool
}

// TxnIndex is a segment's transaction index (<base>.txnindex): the
// transactions aborted by a marker in the segment, in increasing order of
// the marker's offset. The log appends an entry when it writes an ABORT
// marker that ends a non-empty transaction; read_committed fetches collect
// the entries overlapping their range. Entries are few, so they are kept
// in memory; each Append writes through to the file (Sync makes it
// durable), and the file is open only for the write at hand.
//
// A TxnIndex is safe for concurrent use: its RWMutex guards the entries
// and the file; collecting shares it, changes take it exclusively.
type TxnIndex struct {
	mu      sync.RWMutex
	path    string
	base    int64
	entries []AbortedTxn
}

// NewTxnIndex returns the empty index of the segment at base, stored at
// path. The file is created by the first Append.
func NewTxnIndex(path string, base int64) *TxnIndex {
	return &TxnIndex{path: path, base: base}
}

// OpenTxnIndex loads the index at path of the segment at base, recovering
// it: the longest prefix of whole, valid entries (version 0, offsets
// non-negative, FirstOffset ≤ LastOffset, LastOffset at or after base and
// increasing) is kept and the rest of the file cut off; cut is the number
// of bytes removed. A missing file is an empty index.
func OpenTxnIndex(path string, base int64) (x *TxnIndex, cut int64, err error) {
	x = NewTxnIndex(path, base)
	buf, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return x, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read transaction index %s: %w", path, err)
	}
	x.entries = validTxnPrefix(buf, base)
	kept := int64(len(x.entries) * AbortedTxnSize)
	if kept < int64(len(buf)) {
		if err := os.Truncate(path, kept); err != nil {
			return nil, 0, fmt.Errorf("recover transaction index %s: %w", path, err)
		}
	}
	return x, int64(len(buf)) - kept, nil
}

// DecodeTxnIndex reads the bytes of a transaction index file of the
// segment at base (a remote copy's .txnindex object) into a read-only
// index held in memory; an error wraps ErrBadAbortedTxn when b is not
// whole, valid entries.
func DecodeTxnIndex(b []byte, base int64) (*TxnIndex, error) {
	x := &TxnIndex{base: base, entries: validTxnPrefix(b, base)}
	if n := len(x.entries) * AbortedTxnSize; n != len(b) {
		return nil, fmt.Errorf("transaction index of segment %d: %d of %d bytes are valid entries: %w", base, n, len(b), ErrBadAbortedTxn)
	}
	return x, nil
}

// validTxnPrefix decodes the longest prefix of whole, valid entries of buf.
func validTxnPrefix(buf []byte, base int64) []AbortedTxn {
	var out []AbortedTxn
	prev := int64(-1)
	for off := 0; off+AbortedTxnSize <= len(buf); off += AbortedTxnSize {
		a, ok := decodeAbortedTxn(buf[off:])
		if !ok || a.check(base, prev) != nil {
			break
		}
		out = append(out, a)
		prev = a.LastOffset
	}
	return out
}

// check validates an entry of the index of the segment at base, appended
// after an entry with last offset prev (-1: none).
func (a AbortedTxn) check(base, prev int64) error {
	switch {
	case a.ProducerID < 0 || a.FirstOffset < 0 || a.LastStableOffset < 0:
		return fmt.Errorf("%+v has a negative field: %w", a, ErrBadAbortedTxn)
	case a.FirstOffset > a.LastOffset:
		return fmt.Errorf("%+v starts after it ends: %w", a, ErrBadAbortedTxn)
	case a.LastOffset < base:
		return fmt.Errorf("%+v ends before the segment base %d: %w", a, base, ErrBadAbortedTxn)
	case a.LastOffset <= prev:
		return fmt.Errorf("%+v does not end after the previous entry's last offset %d: %w", a, prev, ErrBadAbortedTxn)
	}
	return nil
}

// Path is the index file's path.
func (x *TxnIndex) Path() string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.path
}

// Len is the number of entries.
func (x *TxnIndex) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.entries)
}

// All returns a copy of every entry, oldest first.
func (x *TxnIndex) All() []AbortedTxn {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return slices.Clone(x.entries)
}

// lastOffsetLocked is the last offset of the newest entry, -1 if none.
func (x *TxnIndex) lastOffsetLocked() int64 {
	if len(x.entries) == 0 {
		return -1
	}
	return x.entries[len(x.entries)-1].LastOffset
}

// Append adds an entry and writes it to the file. Its LastOffset must be
// after the previous entry's (markers are appended in offset order) and
// at or after the segment base; a bad entry wraps ErrBadAbortedTxn and
// changes nothing.
func (x *TxnIndex) Append(a AbortedTxn) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := a.check(x.base, x.lastOffsetLocked()); err != nil {
		return fmt.Errorf("append to transaction index %s: %w", x.path, err)
	}
	var buf [AbortedTxnSize]byte
	a.encode(buf[:])
	f, err := os.OpenFile(x.path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err == nil {
		end := int64(len(x.entries) * AbortedTxnSize)
		if _, err = f.WriteAt(buf[:], end); err == nil {
			err = f.Truncate(end + AbortedTxnSize) // stale bytes of an older file
		}
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		// Cut a partial write so the file stays whole entries.
		_ = truncateIfExists(x.path, int64(len(x.entries)*AbortedTxnSize))
		return fmt.Errorf("append to transaction index %s: %w", x.path, err)
	}
	x.entries = append(x.entries, a)
	return nil
}

// CollectAbortedTxns returns the entries whose transactions overlap the
// offsets [fetchOffset, upperBoundOffset): LastOffset ≥ fetchOffset and
// FirstOffset < upperBoundOffset. The search is complete once an entry's
// LastStableOffset reaches upperBoundOffset: every transaction aborted
// later started at or after that LSO, so past the range.
func (x *TxnIndex) CollectAbortedTxns(fetchOffset, upperBoundOffset int64) TxnIndexSearchResult {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var r TxnIndexSearchResult
	for _, a := range x.entries {
		if a.LastOffset >= fetchOffset && a.FirstOffset < upperBoundOffset {
			r.Aborted = append(r.Aborted, a)
		}
		if a.LastStableOffset >= upperBoundOffset {
			r.Complete = true
			return r
		}
	}
	return r
}

// CollectAbortedTxns gathers the aborted transactions overlapping
// [fetchOffset, upperBoundOffset) from the indexes of consecutive
// segments, the first being the segment that holds fetchOffset, as Kafka's
// LocalLog does: it stops after the first index whose search is complete.
// Complete is false when the indexes ran out first, so a caller holding
// more segments (remote ones) goes on with those.
func CollectAbortedTxns(indexes iter.Seq[*TxnIndex], fetchOffset, upperBoundOffset int64) TxnIndexSearchResult {
	var all TxnIndexSearchResult
	for x := range indexes {
		r := x.CollectAbortedTxns(fetchOffset, upperBoundOffset)
		all.Aborted = append(all.Aborted, r.Aborted...)
		if r.Complete {
			all.Complete = true
			break
		}
	}
	return all
}

// TruncateTo drops the entries whose marker is at or after offset, in
// memory and in the file (a log truncation to offset removes those
// markers).
func (x *TxnIndex) TruncateTo(offset int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	n, _ := slices.BinarySearchFunc(x.entries, offset, func(a AbortedTxn, off int64) int {
		if a.LastOffset < off {
			return -1
		}
		return 1
	})
	if n == len(x.entries) {
		return nil
	}
	if err := truncateIfExists(x.path, int64(n*AbortedTxnSize)); err != nil {
		return fmt.Errorf("truncate transaction index %s: %w", x.path, err)
	}
	x.entries = x.entries[:n]
	return nil
}

// Reset drops every entry, in memory and in the file (for a segment
// being rebuilt by recovery).
func (x *TxnIndex) Reset() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := truncateIfExists(x.path, 0); err != nil {
		return fmt.Errorf("reset transaction index %s: %w", x.path, err)
	}
	x.entries = x.entries[:0]
	return nil
}

// SanityCheck verifies the entries as Open does (and as Kafka's
// TransactionIndex.sanityCheck: no entry ends before the segment base);
// an error wraps ErrBadAbortedTxn and means the index must be rebuilt.
func (x *TxnIndex) SanityCheck() error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	prev := int64(-1)
	for i, a := range x.entries {
		if err := a.check(x.base, prev); err != nil {
			return fmt.Errorf("transaction index %s entry %d: %w", x.path, i, err)
		}
		prev = a.LastOffset
	}
	return nil
}

// Sync fdatasyncs the file, if it exists.
func (x *TxnIndex) Sync() error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	f, err := os.OpenFile(x.path, os.O_WRONLY, 0)
	if os.IsNotExist(err) {
		return nil
	}
	if err == nil {
		err = errors.Join(datasync(f), f.Close())
	}
	if err != nil {
		return fmt.Errorf("sync transaction index %s: %w", x.path, err)
	}
	return nil
}

// Rename moves the file (if it exists) to path and points the index at it.
func (x *TxnIndex) Rename(path string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := os.Rename(x.path, path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("rename transaction index %s: %w", x.path, err)
	}
	x.path = path
	return nil
}

// Delete removes the file; a missing file is not an error.
func (x *TxnIndex) Delete() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if err := removeIfExists(x.path); err != nil {
		return fmt.Errorf("delete transaction index %s: %w", x.path, err)
	}
	x.entries = nil
	return nil
}

// truncateIfExists truncates path to size; a missing file is not an error.
func truncateIfExists(path string, size int64) error {
	if err := os.Truncate(path, size); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
