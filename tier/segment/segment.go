package segment

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/strata-broker/strata/tier/record"
)

// Sentinel errors.
var (
	// ErrClosed: the segment was closed or deleted.
	ErrClosed = errors.New("segment: closed")
	// ErrSealed: an append to a sealed segment.
	ErrSealed = errors.New("segment: sealed")
	// ErrOffsetOrder: a batch whose base offset is below the segment's next
	// offset (or its base).
	ErrOffsetOrder = errors.New("segment: offset out of order")
	// ErrFull: the batch's offsets or bytes do not fit the 32-bit relative
	// offsets and positions of the indexes; the log must roll.
	ErrFull = errors.New("segment: segment full")
	// ErrCorrupt: the .log file does not hold whole batches where it should.
	ErrCorrupt = errors.New("segment: corrupt log data")
	// ErrNoSpace: a write failed for lack of space (ENOSPC, EDQUOT) and
	// was undone, so the segment is as it was before and the same write
	// may succeed once space is freed. It wraps the OS error.
	ErrNoSpace = errors.New("segment: no space left on device")
)

// MarkNoSpace wraps err with ErrNoSpace when it is a failure for lack of
// space (ENOSPC, EDQUOT), for a caller whose failed write left nothing
// behind; any other err is returned as it is.
func MarkNoSpace(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %w", ErrNoSpace, err)
	}
	return err
}

// DefaultIndexIntervalBytes is Kafka's index.interval.bytes default.
const DefaultIndexIntervalBytes = 4096

// Options tune a segment.
type Options struct {
	// IndexIntervalBytes is how many log bytes lie between offset index
	// entries; 0 means DefaultIndexIntervalBytes.
	IndexIntervalBytes int
	// Logger receives recovery warnings; nil means slog.Default().
	Logger *slog.Logger
	// Recover makes Open scan the log with Recover instead of trusting it
	// (after an unclean shutdown).
	Recover bool
	// CacheWindow, when positive, is how many bytes at the end of the
	// segment stay in the page cache while it is appended to: older bytes
	// are handed to writeback and then dropped from the cache, so that the
	// cache's pages are reused by later appends instead of the cache
	// growing into fresh memory (on VMs whose free memory goes back to the
	// host, a fresh page costs many times a reused one: doc/perf.md).
	CacheWindow int64
	// FileSuffix is appended to the name of each of the segment's files
	// ("" for a live segment). The log cleaner writes a segment as
	// ".cleaned", renames it to ".swap" and finally to its plain name; see
	// [Segment.RenameSuffix].
	FileSuffix string
	// Files, when set, holds the .log file of the segment once it is
	// sealed and flushed, opening it again when it is read after the
	// cache closed it; nil keeps the file open as long as the segment.
	Files *FileCache
}

// Segment is one segment of a partition log: its .log file, two sparse
// indexes and its transaction index. See the package doc for the layout
// and concurrency model.
type Segment struct {
	dir      string
	base     int64
	interval int64
	log      *slog.Logger
	suffix   atomic.Pointer[string] // extra file-name suffix (Options.FileSuffix)
	files    *FileCache             // Options.Files; nil: file is always set
	slot     cacheSlot              // the file while files holds it (guarded by files.mu)
	txn      *TxnIndex              // the transaction index (its own lock)

	mu sync.RWMutex
	// file is the open .log file while the segment is pinned: active,
	// holding unflushed writes, or without a FileCache. Otherwise it is
	// nil and the cache holds the file (when open).
	file   *fileRef
	ix     indexes
	size   int64 // bytes of whole batches in the .log file
	next   int64 // offset after the last batch
	maxTs  int64 // largest batch MaxTimestamp, -1 when empty
	maxOff int64 // last offset of the first batch that reached maxTs
	// sinceIndex counts log bytes appended since the last offset index entry.
	sinceIndex int64
	sealed     bool
	closed     bool
	err        error // sticky: a failed write fails every later append
	// writes and ixWrites count the changes to the .log file and to the
	// index files; synced and ixSynced are their values as of the last
	// Flush (or Recover) that synced them.
	writes, synced, ixWrites, ixSynced uint64
	// Drop-behind (Options.CacheWindow): bytes from the start handed to
	// writeback, and dropped from the page cache.
	window, writtenBack, dropped int64
}

func newSegment(dir string, base int64, opts Options) *Segment {
	s := &Segment{dir: dir, base: base, interval: int64(opts.IndexIntervalBytes), log: opts.Logger,
		files: opts.Files, next: base, maxTs: -1, maxOff: -1, window: opts.CacheWindow}
	s.suffix.Store(&opts.FileSuffix)
	s.txn = NewTxnIndex(FileName(dir, base, TxnIndexSuffix+opts.FileSuffix), base)
	if s.interval <= 0 {
		s.interval = DefaultIndexIntervalBytes
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}

// Create makes a new empty segment at base in dir, replacing any files of
// that name.
func Create(dir string, base int64, opts Options) (*Segment, error) {
	if base < 0 {
		return nil, fmt.Errorf("create segment %d: negative base offset: %w", base, ErrOffsetOrder)
	}
	s := newSegment(dir, base, opts)
	path := s.LogPath()
	// A transaction index of that name is stale; the new one is created
	// by its first entry.
	if err := removeIfExists(s.txn.Path()); err != nil {
		return nil, fmt.Errorf("create segment %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create segment %s: %w", path, MarkNoSpace(err))
	}
	s.file = newFileRef(f, true)
	// Any index files of that name are emptied.
	s.ix = newIndexes(dir, base, opts.FileSuffix)
	if err := s.ix.reset(); err != nil {
		_ = f.Close()
		// Leave nothing behind, so that a failed roll can be retried.
		if rerr := removeFiles(dir, base, opts.FileSuffix); rerr != nil {
			return nil, fmt.Errorf("create segment %s: %w", path, errors.Join(err, rerr))
		}
		return nil, fmt.Errorf("create segment %s: %w", path, MarkNoSpace(err))
	}
	s.writes, s.ixWrites = 1, 1 // not durable until flushed
	return s, nil
}

// Open opens the existing segment at base in dir. Without opts.Recover it
// does not scan the log: it loads the indexes and reads the batch headers
// after the last offset index entry to find the next offset; missing or
// damaged index files, or a tail that does not frame, make it run Recover.
// With opts.Recover it always runs Recover.
func Open(dir string, base int64, opts Options) (*Segment, error) {
	s := newSegment(dir, base, opts)
	path := s.LogPath()
	f, err := os.OpenFile(path, os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open segment %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("open segment %s: %w", path, err)
	}
	s.file, s.size = newFileRef(f, true), st.Size()
	s.ix, err = loadIndexes(dir, base, opts.FileSuffix)
	if s.ix.off == nil {
		_ = f.Close()
		return nil, fmt.Errorf("open segment %s: %w", path, err)
	}
	if errors.Is(err, errMissingIndex) && s.size == 0 {
		// A new segment whose index files were never written: create
		// them, empty, as readers of the files (the tier's copier)
		// expect them.
		err = s.ix.reset()
	}
	if err == nil {
		err = s.ix.check(s.size)
	}
	if err == nil && !opts.Recover {
		err = s.scanTail()
	}
	if err != nil || opts.Recover {
		if err != nil {
			s.log.Warn("segment indexes unusable, rebuilding from the log", "segment", path, "err", err)
		}
		if _, err := s.Recover(); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("open segment %s: %w", path, err)
		}
	}
	if err := s.openTxnIndex(opts.FileSuffix); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("open segment %s: %w", path, err)
	}
	return s, nil
}

// scanTail derives next, maxTs, maxOff and sinceIndex from the indexes and
// the batch headers after the last offset index entry. Caller holds mu (or
// owns the segment exclusively).
func (s *Segment) scanTail() error {
	start, wantLast := int64(0), int64(-1)
	s.next, s.maxTs, s.maxOff = s.base, -1, -1
	if e, ok := s.ix.off.last(); ok {
		start, wantLast = int64(e.pos), s.base+int64(e.rel)
	}
	if e, ok := s.ix.time.last(); ok {
		s.maxTs, s.maxOff = e.ts, s.base+int64(e.rel)
	}
	sc := newScanner(s.file.f, start, s.size)
	for {
		h, err := sc.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := s.checkOrder(h.BaseOffset, h.LastOffset); err != nil {
			return err
		}
		if wantLast >= 0 && h.Pos == start && h.LastOffset != wantLast {
			return fmt.Errorf("offset index names offset %d for the batch at %d ending at %d: %w", wantLast, start, h.LastOffset, errBadIndex)
		}
		s.next = h.LastOffset + 1
		if h.MaxTimestamp > s.maxTs {
			s.maxTs, s.maxOff = h.MaxTimestamp, h.LastOffset
		}
	}
	s.sinceIndex = s.size - start
	if e, ok := s.ix.time.last(); ok && s.base+int64(e.rel) >= s.next {
		return fmt.Errorf("time index entry at offset %d past the log end %d: %w", s.base+int64(e.rel), s.next, errBadIndex)
	}
	if e, ok := s.ix.off.last(); ok && s.base+int64(e.rel) >= s.next {
		return fmt.Errorf("offset index entry at offset %d past the log end %d: %w", s.base+int64(e.rel), s.next, errBadIndex)
	}
	return nil
}

// checkOrder verifies that a batch [base, last] may follow the segment's
// current content.
func (s *Segment) checkOrder(base, last int64) error {
	if base < s.next || last < base {
		return fmt.Errorf("batch [%d, %d] after next offset %d: %w", base, last, s.next, ErrOffsetOrder)
	}
	if last-s.base > math.MaxUint32 {
		return fmt.Errorf("batch last offset %d too far from base %d: %w", last, s.base, ErrFull)
	}
	return nil
}

// Append writes one batch whose offsets are already assigned. The batch
// must start at or after NextOffset; its bytes are written unchanged.
func (s *Segment) Append(b record.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.err != nil:
		return s.err
	case s.sealed:
		return fmt.Errorf("append to segment %d: %w", s.base, ErrSealed)
	}
	if err := s.checkOrder(b.BaseOffset(), b.LastOffset()); err != nil {
		return fmt.Errorf("append to segment %d: %w", s.base, err)
	}
	if s.size+int64(len(b)) > math.MaxUint32 {
		return fmt.Errorf("append %d bytes to segment %d of %d bytes: %w", len(b), s.base, s.size, ErrFull)
	}
	s.writes++
	if _, err := s.file.f.WriteAt(b, s.size); err != nil {
		werr := fmt.Errorf("append to segment %s: %w", s.LogPath(), err)
		if terr := s.file.f.Truncate(s.size); terr != nil {
			s.err = errors.Join(werr, terr)
			return s.err
		}
		// The partial batch is gone: only a failure for lack of space,
		// which freeing space cures, leaves the segment usable.
		if werr = MarkNoSpace(werr); !errors.Is(werr, ErrNoSpace) {
			s.err = werr
		}
		return werr
	}
	s.track(parseHeader(b, s.size))
	s.dropBehind()
	return nil
}

// SetCacheWindow changes the page-cache window of appends from now on
// (Options.CacheWindow), as when the log is appended to as a follower
// rather than as the leader. Turning it on does not drop the bytes already
// more than the window behind: they are left to the OS, as they were.
func (s *Segment) SetCacheWindow(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == s.window {
		return
	}
	if s.window <= 0 && n > 0 {
		from := max(s.writtenBack, s.size-n)
		s.writtenBack, s.dropped = from, from
	}
	s.window = n
}

// CacheWindow is the page-cache window appends use now (0: none).
func (s *Segment) CacheWindow() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.window
}

// dropStep is the unit of drop-behind: ranges this long are handed to
// writeback, and dropped from the page cache two steps later, when their
// writeback has most likely finished (dirty pages cannot be dropped).
const dropStep = 8 << 20

// dropBehind hands the bytes more than the cache window behind the end to
// writeback, and drops those written back earlier from the page cache. It
// is advice: errors are ignored, the data is on its way to disk either way.
// Caller holds mu for writing.
func (s *Segment) dropBehind() {
	if s.window <= 0 {
		return
	}
	for s.size-s.writtenBack > s.window+dropStep {
		startWriteback(s.file.f, s.writtenBack, dropStep)
		s.writtenBack += dropStep
		for s.writtenBack-s.dropped > 2*dropStep {
			dropCache(s.file.f, s.dropped, dropStep)
			s.dropped += dropStep
		}
	}
}

// track accounts for a batch now present at h.Pos: size, next offset,
// max timestamp and the sparse index entries (Kafka's rule: an entry for
// the batch that follows more than interval bytes since the last one).
func (s *Segment) track(h BatchHeader) {
	if h.MaxTimestamp > s.maxTs {
		s.maxTs, s.maxOff = h.MaxTimestamp, h.LastOffset
	}
	if s.sinceIndex > s.interval {
		s.ix.off.add(offsetEntry{rel: uint32(h.LastOffset - s.base), pos: uint32(h.Pos)})
		s.maybeAddTimeEntry()
		s.sinceIndex = 0
	}
	s.sinceIndex += h.Size
	s.size = h.Pos + h.Size
	s.next = h.LastOffset + 1
}

// maybeAddTimeEntry records the max timestamp so far if it is newer than
// the last time index entry.
func (s *Segment) maybeAddTimeEntry() {
	if s.maxOff < 0 {
		return
	}
	if e, ok := s.ix.time.last(); ok && e.ts >= s.maxTs {
		return
	}
	s.ix.time.add(timeEntry{ts: s.maxTs, rel: uint32(s.maxOff - s.base)})
}

// Flush persists the index entries and fdatasyncs what was written to the
// .log and index files since the last Flush. The syncs run under the read
// lock, so reads proceed meanwhile. A sealed segment's .log file goes to
// the FileCache once flushed.
func (s *Segment) Flush() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("flush segment %s: %w", s.LogPath(), ErrClosed)
	}
	err := s.persistLocked()
	writes, ixWrites := s.writes, s.ixWrites
	logDirty, ixDirty := writes != s.synced, ixWrites != s.ixSynced
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("flush segment %s: %w", s.LogPath(), err)
	}
	if !logDirty && !ixDirty {
		return nil
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return fmt.Errorf("flush segment %s: %w", s.LogPath(), ErrClosed)
	}
	// A file no longer pinned was synced by a concurrent Flush.
	if logDirty && s.file != nil {
		err = datasync(s.file.f)
	}
	if ixDirty {
		err = errors.Join(err, s.ix.sync(), s.txn.Sync())
	}
	s.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("flush segment %s: %w", s.LogPath(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.synced, s.ixSynced = max(s.synced, writes), max(s.ixSynced, ixWrites)
	s.unpinIfClean()
	return nil
}

// persistLocked writes the pending index entries. Caller holds mu for
// writing.
func (s *Segment) persistLocked() error {
	wrote, err := s.ix.persist()
	if wrote {
		s.ixWrites++
	}
	return err
}

// Seal marks the segment read-only (the log rolled past it) and adds the
// final time index entry, so a reopened segment knows its max timestamp.
// Once it is flushed too, its .log file goes to the FileCache.
func (s *Segment) Seal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.maybeAddTimeEntry()
	// Sealed only once the indexes are written: a seal that failed for
	// lack of space leaves an active segment, and may be retried.
	if err := s.persistLocked(); err != nil {
		return fmt.Errorf("seal segment %s: %w", s.LogPath(), MarkNoSpace(err))
	}
	s.sealed = true
	s.unpinIfClean()
	return nil
}

// unpinIfClean hands the .log file of a sealed segment whose writes are
// all synced to the FileCache. Caller holds mu for writing.
func (s *Segment) unpinIfClean() {
	if s.files == nil || s.file == nil || !s.sealed || s.closed || s.writes != s.synced {
		return
	}
	r := s.file
	s.file = nil
	s.files.adopt(&s.slot, r)
}

// pinLocked makes sure file holds the .log file open for writing, taking
// it back from the FileCache or opening it again. Caller holds mu for
// writing.
func (s *Segment) pinLocked() error {
	if s.file != nil {
		return nil
	}
	if r := s.files.take(&s.slot); r != nil {
		if r.writable {
			s.file = r
			return nil
		}
		_ = r.release()
	}
	f, err := os.OpenFile(s.LogPath(), os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("reopen segment %s: %w", s.LogPath(), err)
	}
	s.file = newFileRef(f, true)
	return nil
}

// acquireFile returns the .log file with a reference for the caller, who
// releases it: the pinned file, or the FileCache's, opened again if the
// cache closed it. Caller holds mu and has checked closed.
func (s *Segment) acquireFile() (*fileRef, error) {
	if s.file != nil {
		if !s.file.acquire() {
			return nil, ErrClosed
		}
		return s.file, nil
	}
	r, err := s.files.acquire(&s.slot, s.LogPath())
	if err != nil {
		return nil, fmt.Errorf("open segment %s: %w", s.LogPath(), err)
	}
	return r, nil
}

// releaseFile drops the segment's reference to its .log file (the
// FileCache's, when it holds the file). Caller holds mu for writing.
func (s *Segment) releaseFile() error {
	if s.file != nil {
		r := s.file
		s.file = nil
		return r.release()
	}
	if s.files != nil {
		return s.files.drop(&s.slot)
	}
	return nil
}

// Close persists the indexes and releases the segment's reference to its
// .log file; outstanding Slices keep the file open until released.
func (s *Segment) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.maybeAddTimeEntry()
	err := errors.Join(s.persistLocked(), s.releaseFile())
	if err != nil {
		return fmt.Errorf("close segment %s: %w", s.LogPath(), err)
	}
	return nil
}

// Delete closes the segment and removes its files. Outstanding Slices can
// still be read: the open file survives its name.
func (s *Segment) Delete() error {
	s.Abandon()
	return removeFiles(s.dir, s.base, *s.suffix.Load())
}

// Abandon closes the segment without persisting its indexes, for a
// segment whose files are about to be removed with their directory.
// Outstanding readers keep the log file open until they finish.
func (s *Segment) Abandon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		_ = s.releaseFile()
	}
}

// RemoveFiles removes the files of the segment at base in dir, for
// segments that are not open; missing files are not an error.
func RemoveFiles(dir string, base int64) error { return removeFiles(dir, base, "") }

// removeFiles is RemoveFiles for files named with an extra suffix.
func removeFiles(dir string, base int64, extra string) error {
	var errs []error
	for _, suffix := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix} {
		errs = append(errs, removeIfExists(FileName(dir, base, suffix+extra)))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove segment %d: %w", base, err)
	}
	return nil
}

// TruncateTo removes every batch whose last offset is ≥ offset (so a batch
// holding offset goes entirely, as in Kafka) and unseals the segment. It
// returns the number of bytes removed.
func (s *Segment) TruncateTo(offset int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	if err := s.pinLocked(); err != nil {
		s.err = fmt.Errorf("truncate segment %s: %w", s.LogPath(), err)
		return 0, s.err
	}
	s.sealed = false
	pos, err := s.position(s.file.f, offset, s.size)
	if err != nil || pos >= s.size {
		return 0, err
	}
	removed := s.size - pos
	s.writes++
	if err := s.file.f.Truncate(pos); err != nil {
		s.err = fmt.Errorf("truncate segment %s: %w", s.LogPath(), err)
		return 0, s.err
	}
	s.size = pos
	s.writtenBack, s.dropped = min(s.writtenBack, pos), min(s.dropped, pos)
	keepOff := s.ix.off.search(func(e offsetEntry) bool { return int64(e.pos) < pos })
	keepTime := s.ix.time.search(func(e timeEntry) bool { return s.base+int64(e.rel) < offset })
	offChanged, offErr := s.ix.off.truncate(keepOff)
	timeChanged, timeErr := s.ix.time.truncate(keepTime)
	if offChanged || timeChanged {
		s.ixWrites++
	}
	if err := errors.Join(offErr, timeErr, s.txn.TruncateTo(offset), s.scanTail()); err != nil {
		s.err = fmt.Errorf("truncate segment %s: %w", s.LogPath(), err)
		return removed, s.err
	}
	return removed, nil
}

// BaseOffset is the offset the segment starts at (its file name).
func (s *Segment) BaseOffset() int64 { return s.base }

// NextOffset is the offset after the segment's last batch (BaseOffset when
// empty).
func (s *Segment) NextOffset() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.next
}

// Size is the .log file's size in bytes.
func (s *Segment) Size() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.size
}

// MaxTimestamp is the largest batch MaxTimestamp in the segment, -1 when
// it is empty.
func (s *Segment) MaxTimestamp() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.maxTs
}

// Sealed reports whether the segment was sealed (no appends until a
// truncation reopens it).
func (s *Segment) Sealed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.sealed
}

// LogPath is the path of the .log file.
func (s *Segment) LogPath() string { return s.path(LogSuffix) }

// IndexPath is the path of the offset index file.
func (s *Segment) IndexPath() string { return s.path(IndexSuffix) }

// TimeIndexPath is the path of the time index file.
func (s *Segment) TimeIndexPath() string { return s.path(TimeIndexSuffix) }

// path is the current path of the segment file of the given kind.
func (s *Segment) path(kind string) string { return FileName(s.dir, s.base, kind+*s.suffix.Load()) }
