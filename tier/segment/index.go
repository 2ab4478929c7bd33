package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
)

// errBadIndex marks an index file that must be rebuilt from the log.
var errBadIndex = errors.New("segment: index needs rebuilding")

// errMissingIndex marks an index file that did not exist; it must be
// rebuilt unless the log is empty too.
var errMissingIndex = fmt.Errorf("missing index: %w", errBadIndex)

// Entry sizes of the two index files.
const (
	offsetEntrySize = 8  // relative offset uint32, position uint32
	timeEntrySize   = 12 // timestamp int64, relative offset uint32
)

// offsetEntry maps the last offset of a batch (relative to the segment
// base) to the batch's position in the .log file.
type offsetEntry struct{ rel, pos uint32 }

// timeEntry says that the batches up to and including relative offset rel
// have timestamps ≤ ts, and the batch ending at rel has exactly ts.
type timeEntry struct {
	ts  int64
	rel uint32
}

func encodeOffsetEntry(b []byte, e offsetEntry) {
	binary.BigEndian.PutUint32(b, e.rel)
	binary.BigEndian.PutUint32(b[4:], e.pos)
}

func decodeOffsetEntry(b []byte) offsetEntry {
	return offsetEntry{rel: binary.BigEndian.Uint32(b), pos: binary.BigEndian.Uint32(b[4:])}
}

func encodeTimeEntry(b []byte, e timeEntry) {
	binary.BigEndian.PutUint64(b, uint64(e.ts))
	binary.BigEndian.PutUint32(b[8:], e.rel)
}

func decodeTimeEntry(b []byte) timeEntry {
	return timeEntry{ts: int64(binary.BigEndian.Uint64(b)), rel: binary.BigEndian.Uint32(b[8:])}
}

// indexFile is a sparse index kept in memory and persisted to its file.
// Entries are appended in memory and written out lazily by persist (on
// flush, seal and close); an index that lags its log is still correct,
// since look-ups scan forward from the entry they find. The file is open
// only while it is written, truncated or synced, so an index holds no
// descriptor.
type indexFile[E any] struct {
	name      string // the file's current path
	entries   []E
	written   int // entries[:written] are in the file
	entrySize int
	enc       func([]byte, E)
	dec       func([]byte) E
}

// loadIndexFile loads an index file's entries. A missing file yields
// errMissingIndex and a size that is not a multiple of the entry size
// errBadIndex, both with the index, so the caller can rebuild it.
func loadIndexFile[E any](path string, entrySize int, enc func([]byte, E), dec func([]byte) E) (*indexFile[E], error) {
	x := &indexFile[E]{name: path, entrySize: entrySize, enc: enc, dec: dec}
	buf, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return x, fmt.Errorf("index %s was missing: %w", path, errMissingIndex)
	}
	if err != nil {
		return nil, fmt.Errorf("read index %s: %w", path, err)
	}
	if len(buf)%entrySize != 0 {
		return x, fmt.Errorf("index %s: size %d is not a multiple of %d: %w", path, len(buf), entrySize, errBadIndex)
	}
	x.entries = make([]E, 0, len(buf)/entrySize)
	for off := 0; off < len(buf); off += entrySize {
		x.entries = append(x.entries, dec(buf[off:]))
	}
	x.written = len(x.entries)
	return x, nil
}

// search returns the number of entries for which before reports true,
// assuming before is true for a prefix of the entries.
func (x *indexFile[E]) search(before func(E) bool) int {
	return sort.Search(len(x.entries), func(i int) bool { return !before(x.entries[i]) })
}

// last returns the newest entry.
func (x *indexFile[E]) last() (E, bool) {
	if len(x.entries) == 0 {
		var zero E
		return zero, false
	}
	return x.entries[len(x.entries)-1], true
}

// add appends an entry in memory.
func (x *indexFile[E]) add(e E) { x.entries = append(x.entries, e) }

// truncate keeps the first n entries, in memory and in the file; it
// reports whether the file changed.
func (x *indexFile[E]) truncate(n int) (bool, error) {
	if n >= len(x.entries) {
		return false, nil
	}
	x.entries = x.entries[:n]
	if x.written <= n {
		return false, nil
	}
	x.written = n
	if err := os.Truncate(x.name, int64(n*x.entrySize)); err != nil {
		return true, fmt.Errorf("truncate index %s: %w", x.name, err)
	}
	return true, nil
}

// reset drops every entry, in memory and in the file, creating the file
// empty if it is missing.
func (x *indexFile[E]) reset() error {
	x.entries = x.entries[:0]
	x.written = 0
	f, err := os.OpenFile(x.name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		return fmt.Errorf("reset index %s: %w", x.name, err)
	}
	return nil
}

// persist writes the entries not yet in the file; it reports whether it
// wrote any.
func (x *indexFile[E]) persist() (bool, error) {
	if x.written == len(x.entries) {
		return false, nil
	}
	buf := make([]byte, (len(x.entries)-x.written)*x.entrySize)
	for i, e := range x.entries[x.written:] {
		x.enc(buf[i*x.entrySize:], e)
	}
	f, err := os.OpenFile(x.name, os.O_WRONLY|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.WriteAt(buf, int64(x.written*x.entrySize))
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return true, fmt.Errorf("write index %s: %w", x.name, err)
	}
	x.written = len(x.entries)
	return true, nil
}

// sync fdatasyncs the file (what persist wrote).
func (x *indexFile[E]) sync() error {
	f, err := os.OpenFile(x.name, os.O_WRONLY|os.O_CREATE, 0o644)
	if err == nil {
		err = errors.Join(datasync(f), f.Close())
	}
	if err != nil {
		return fmt.Errorf("sync index %s: %w", x.name, err)
	}
	return nil
}

// indexes is the pair of sparse indexes of one segment.
type indexes struct {
	off  *indexFile[offsetEntry]
	time *indexFile[timeEntry]
}

// loadIndexes loads both index files of the segment at base, whose names
// carry the extra suffix. A damaged or missing file is reported with
// errBadIndex and both indexes returned, to be rebuilt.
func loadIndexes(dir string, base int64, extra string) (indexes, error) {
	off, err := loadIndexFile(FileName(dir, base, IndexSuffix+extra), offsetEntrySize, encodeOffsetEntry, decodeOffsetEntry)
	if off == nil {
		return indexes{}, err
	}
	tim, terr := loadIndexFile(FileName(dir, base, TimeIndexSuffix+extra), timeEntrySize, encodeTimeEntry, decodeTimeEntry)
	if tim == nil {
		return indexes{}, terr
	}
	return indexes{off: off, time: tim}, errors.Join(err, terr)
}

// newIndexes returns the empty indexes of a new segment at base.
func newIndexes(dir string, base int64, extra string) indexes {
	return indexes{
		off:  &indexFile[offsetEntry]{name: FileName(dir, base, IndexSuffix+extra), entrySize: offsetEntrySize, enc: encodeOffsetEntry, dec: decodeOffsetEntry},
		time: &indexFile[timeEntry]{name: FileName(dir, base, TimeIndexSuffix+extra), entrySize: timeEntrySize, enc: encodeTimeEntry, dec: decodeTimeEntry},
	}
}

// check verifies the loaded entries against a log of logSize bytes:
// offsets and positions strictly increasing, positions inside the log,
// timestamps strictly increasing, time offsets non-decreasing.
func (ix indexes) check(logSize int64) error {
	for i, e := range ix.off.entries {
		if int64(e.pos) >= logSize {
			return fmt.Errorf("offset index entry %d points at %d past the log end %d: %w", i, e.pos, logSize, errBadIndex)
		}
		if i > 0 && (e.rel <= ix.off.entries[i-1].rel || e.pos <= ix.off.entries[i-1].pos) {
			return fmt.Errorf("offset index entry %d does not increase: %w", i, errBadIndex)
		}
	}
	for i, e := range ix.time.entries {
		if i > 0 && (e.ts <= ix.time.entries[i-1].ts || e.rel < ix.time.entries[i-1].rel) {
			return fmt.Errorf("time index entry %d does not increase: %w", i, errBadIndex)
		}
	}
	return nil
}

// lookupPos returns the position of the last indexed batch whose last
// offset is ≤ rel (0 when there is none): a batch boundary at or before the
// batch holding rel.
func (ix indexes) lookupPos(rel uint32) int64 {
	i := ix.off.search(func(e offsetEntry) bool { return e.rel <= rel })
	if i == 0 {
		return 0
	}
	return int64(ix.off.entries[i-1].pos)
}

// lookupTime returns the relative offset to start scanning from for the
// first batch with a timestamp ≥ ts: every batch before it is older.
func (ix indexes) lookupTime(ts int64) uint32 {
	i := ix.time.search(func(e timeEntry) bool { return e.ts < ts })
	if i == 0 {
		return 0
	}
	return ix.time.entries[i-1].rel
}

// persist writes both files' pending entries; it reports whether it
// wrote any.
func (ix indexes) persist() (bool, error) {
	a, err := ix.off.persist()
	b, terr := ix.time.persist()
	return a || b, errors.Join(err, terr)
}

// reset empties both indexes.
func (ix indexes) reset() error {
	return errors.Join(ix.off.reset(), ix.time.reset())
}

// sync fdatasyncs both files.
func (ix indexes) sync() error {
	return errors.Join(ix.off.sync(), ix.time.sync())
}

// rename points both indexes at their files' names with the extra suffix.
func (ix indexes) rename(dir string, base int64, extra string) {
	ix.off.name = FileName(dir, base, IndexSuffix+extra)
	ix.time.name = FileName(dir, base, TimeIndexSuffix+extra)
}
