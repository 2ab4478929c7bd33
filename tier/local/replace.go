package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/strata-broker/strata/tier/segment"
)

// Extra file-name suffixes of a cleaned segment on its way into the log
// (Kafka's names): the cleaner writes <base>.log.cleaned (and indexes),
// ReplaceSegments renames them to .swap — the commit point — and, once the
// replaced segments are deleted, to their plain names.
const (
	CleanedFileSuffix = ".cleaned"
	SwapFileSuffix    = ".swap"
)

// swapEndSuffix names the file that records where a swap's replaced range
// ends (<base>.swap-end). A cleaned segment may end before the segments
// it replaces did (the cleaner drops emptied batches, so its last batch
// may be gone, or every batch), so its own next offset does not say
// which segments it replaces; recovery reads this file instead.
const swapEndSuffix = ".swap-end"

// ErrSegmentsChanged: the segments a cleaner read were truncated, deleted
// or replaced before its result could be swapped in; the result is stale
// and must be discarded.
var ErrSegmentsChanged = errors.New("local: segments changed while they were cleaned")

// replaceHook, when set (tests only), is called at each step of
// ReplaceSegments after the files changed; an error stops the swap there
// as a crash would, leaving the files as they are.
var replaceHook func(step string) error

// ReadSegment returns a Slice over every batch of the sealed segment that
// info (from Segments) describes, for the log cleaner. It fails with
// ErrSegmentsChanged when that segment is no longer part of the log. The
// caller must Release the Slice.
func (l *Log) ReadSegment(info SegmentInfo) (segment.Slice, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return segment.Slice{}, ErrClosed
	}
	if info.seg == nil || !slices.Contains(l.segs, info.seg) {
		return segment.Slice{}, fmt.Errorf("read segment %d: %w", info.BaseOffset, ErrSegmentsChanged)
	}
	sl, err := info.seg.ReadAll()
	if err != nil {
		return segment.Slice{}, fmt.Errorf("read segment %d: %w", info.BaseOffset, err)
	}
	return sl, nil
}

// CreateCleaned creates an empty segment at base whose files are named
// with CleanedFileSuffix, for the cleaner to fill with Append, Seal and
// Flush before handing it to ReplaceSegments (or Delete on failure). Such
// files left behind by a crash are removed by Open.
func (l *Log) CreateCleaned(base int64) (*segment.Segment, error) {
	l.mu.RLock()
	opts := l.segmentOptions()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	opts.FileSuffix = CleanedFileSuffix
	s, err := segment.Create(l.dir, base, opts)
	if err != nil {
		return nil, fmt.Errorf("create cleaned segment %d: %w", base, err)
	}
	return s, nil
}

// ReplaceSegments swaps cleaned in for the consecutive sealed segments old
// (from Segments), crash-safely, the way Kafka does:
//
//  1. cleaned's files are renamed from .cleaned to .swap (indexes first,
//     .log last) and the directory is synced: the commit point;
//  2. the old segments' files are deleted;
//  3. cleaned's files are renamed to their plain names and the directory
//     is synced.
//
// Before step 1 the end of the replaced range (past the last old
// segment's base and batches) is written to <base>.swap-end. Open rolls a
// swap forward when <base>.log.swap exists (it deletes the segments whose
// base lies inside the replaced range and finishes the renames) and back
// otherwise (it deletes .cleaned files, stray index .swap files and
// swap-end files), so a crash at any point leaves either the old or the
// new segment set.
//
// cleaned must be sealed and flushed, and start at old[0]'s base; its
// batches end at or before the last old segment's next offset (it may
// hold no batch at all: Kafka's cleaner, too, keeps a cleaned segment's
// base as its name whatever it holds). Readers holding Slices of the old
// segments keep reading them. ErrSegmentsChanged means the log changed
// since Segments was called. ReplaceSegments takes cleaned over: it
// deletes it when the swap fails before its commit point; a failure after
// the commit point fails the log (the next Open completes the swap).
func (l *Log) ReplaceSegments(old []SegmentInfo, cleaned *segment.Segment) error {
	if cleaned == nil {
		return errors.New("local: replace segments: no cleaned segment")
	}
	return l.replace(old, cleaned, true)
}

// ReplaceSegmentsIndexed is ReplaceSegments for a cleaned segment whose
// transaction index the caller wrote itself: the log cleaner keeps only
// the entries of aborted transactions whose records it kept, so the old
// segments' entries are not carried over.
func (l *Log) ReplaceSegmentsIndexed(old []SegmentInfo, cleaned *segment.Segment) error {
	if cleaned == nil {
		return errors.New("local: replace segments: no cleaned segment")
	}
	return l.replace(old, cleaned, false)
}

// replace implements ReplaceSegments; carry says whether the old
// segments' transaction index entries go into cleaned.
func (l *Log) replace(old []SegmentInfo, cleaned *segment.Segment, carry bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	committed, err := l.replaceLocked(old, cleaned, carry)
	if err != nil && !committed {
		if derr := cleaned.Delete(); derr != nil {
			l.logger.Warn("cannot delete an unused cleaned segment", "base", cleaned.BaseOffset(), "err", derr)
		}
	}
	return err
}

// replaceLocked implements replace; committed reports whether the
// swap passed its commit point (cleaned then belongs to the log). Caller
// holds mu.
func (l *Log) replaceLocked(old []SegmentInfo, cleaned *segment.Segment, carry bool) (committed bool, err error) {
	if len(old) == 0 {
		return false, errors.New("local: replace segments: nothing to replace")
	}
	if err := l.usable(); err != nil {
		return false, err
	}
	i := slices.Index(l.segs, old[0].seg)
	if old[0].seg == nil || i < 0 || i+len(old) >= len(l.segs) {
		return false, fmt.Errorf("replace segments from %d: %w", old[0].BaseOffset, ErrSegmentsChanged)
	}
	for j, o := range old {
		if s := l.segs[i+j]; s != o.seg || !s.Sealed() || s.Size() != o.Size || s.NextOffset() != o.NextOffset {
			return false, fmt.Errorf("replace segment %d: %w", o.BaseOffset, ErrSegmentsChanged)
		}
	}
	last := old[len(old)-1]
	switch {
	case cleaned.FileSuffix() != CleanedFileSuffix || !cleaned.Sealed():
		return false, fmt.Errorf("local: replace segments from %d: cleaned segment is not a sealed %s segment", old[0].BaseOffset, CleanedFileSuffix)
	case cleaned.BaseOffset() != old[0].BaseOffset || cleaned.NextOffset() > last.NextOffset:
		return false, fmt.Errorf("local: replace segments [%d, %d) with a segment covering [%d, %d)",
			old[0].BaseOffset, last.NextOffset, cleaned.BaseOffset(), cleaned.NextOffset())
	}
	if carry {
		if err := carryTxnIndex(l.segs[i:i+len(old)], cleaned); err != nil {
			return false, fmt.Errorf("replace segments from %d: %w", old[0].BaseOffset, err)
		}
	}
	// The range must take in the last old segment's base even when that
	// segment is empty (its next offset is its base); the segment after it
	// starts further on.
	endPath := segment.FileName(l.dir, cleaned.BaseOffset(), swapEndSuffix)
	if err := writeSwapEnd(endPath, max(last.NextOffset, last.BaseOffset+1)); err != nil {
		return false, fmt.Errorf("replace segments from %d: %w", old[0].BaseOffset, err)
	}
	if err := hook("swap-end"); err != nil {
		return false, errors.Join(err, removeFile(endPath))
	}
	if err := cleaned.RenameSuffix(SwapFileSuffix); err != nil {
		return false, errors.Join(fmt.Errorf("replace segments from %d: %w", old[0].BaseOffset, err), removeFile(endPath))
	}
	if err := segment.SyncDir(l.dir); err != nil {
		// Whether the commit is durable is unknown: let recovery decide.
		return true, l.fail(fmt.Errorf("replace segments: %w", err))
	}
	if err := hook("committed"); err != nil {
		return true, err
	}
	// Past the commit point: from here on a crash is rolled forward.
	var errs []error
	for j, s := range l.segs[i : i+len(old)] {
		errs = append(errs, s.Delete())
		if err := hook(fmt.Sprintf("deleted-%d", j)); err != nil {
			return true, err
		}
	}
	errs = append(errs, cleaned.RenameSuffix(""))
	if err := hook("renamed"); err != nil {
		return true, err
	}
	errs = append(errs, removeFile(endPath), segment.SyncDir(l.dir))
	l.segs = slices.Replace(l.segs, i, i+len(old), cleaned)
	if err := errors.Join(errs...); err != nil {
		return true, l.fail(fmt.Errorf("replace segments: %w", err))
	}
	l.logger.Debug("replaced segments with a cleaned one", "base", cleaned.BaseOffset(), "replaced", len(old), "size", cleaned.Size())
	return true, hook("done")
}

// hook runs replaceHook for step, if set.
func hook(step string) error {
	if replaceHook == nil {
		return nil
	}
	return replaceHook(step)
}

// completeSwaps finishes or undoes the swaps of ReplaceSegments that a
// crash interrupted. Files named .cleaned are removed (not committed). For
// every <base>.log.swap the swap was committed: the segments with a base
// inside the replaced range (base, end) are deleted and the .swap files
// are renamed over <base>'s files. Index .swap files and swap-end files
// without a .log.swap belong to a commit that did not happen (or to a
// swap already completed) and are removed. Called by recover before the
// segments are listed.
func (l *Log) completeSwaps() error {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", l.dir, err)
	}
	var swaps, logs []int64
	strays := map[int64][]string{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, CleanedFileSuffix) {
			if err := removeFile(filepath.Join(l.dir, name)); err != nil {
				return fmt.Errorf("remove unfinished cleaned file: %w", err)
			}
			continue
		}
		base, suffix, ok := segment.ParseFileName(name)
		switch {
		case !ok:
		case suffix == segment.LogSuffix:
			logs = append(logs, base)
		case suffix == segment.LogSuffix+SwapFileSuffix:
			swaps = append(swaps, base)
		case strings.HasSuffix(suffix, SwapFileSuffix), suffix == swapEndSuffix:
			strays[base] = append(strays[base], name)
		}
	}
	for base, names := range strays {
		if slices.Contains(swaps, base) {
			continue
		}
		for _, name := range names {
			if err := removeFile(filepath.Join(l.dir, name)); err != nil {
				return fmt.Errorf("remove uncommitted swap file: %w", err)
			}
		}
	}
	slices.Sort(swaps)
	for _, base := range swaps {
		if err := l.rollSwapForward(base, logs); err != nil {
			return err
		}
	}
	if len(swaps) > 0 || len(strays) > 0 {
		return segment.SyncDir(l.dir)
	}
	return nil
}

// rollSwapForward completes the committed swap at base; logs are the
// bases of the plain .log files in the directory. The replaced range ends
// where the swap-end file says, or (a swap without one) at the swapped
// segment's next offset.
func (l *Log) rollSwapForward(base int64, logs []int64) error {
	opts := l.segmentOptions()
	opts.FileSuffix, opts.Recover = SwapFileSuffix, true
	s, err := segment.Open(l.dir, base, opts)
	if err != nil {
		return fmt.Errorf("complete segment swap at %d: %w", base, err)
	}
	endPath := segment.FileName(l.dir, base, swapEndSuffix)
	end := s.NextOffset()
	if recorded, ok := readSwapEnd(endPath); ok {
		end = max(end, recorded)
	}
	var errs []error
	for _, b := range logs {
		if b > base && b < end {
			errs = append(errs, segment.RemoveFiles(l.dir, b))
		}
	}
	if err := errors.Join(errs...); err != nil {
		_ = s.Close()
		return fmt.Errorf("complete segment swap at %d: %w", base, err)
	}
	err = errors.Join(s.RenameSuffix(""), s.Close(), removeFile(endPath))
	if err != nil {
		return fmt.Errorf("complete segment swap at %d: %w", base, err)
	}
	l.logger.Warn("completed a segment swap interrupted by a crash", "base", base, "end", end)
	return nil
}

// writeSwapEnd durably records end, the end of a swap's replaced range, at
// path.
func writeSwapEnd(path string, end int64) error {
	body := fmt.Sprintf("strata-swap-end 1\nend-offset %d\n", end)
	if err := segment.WriteFileAtomic(path, []byte(body)); err != nil {
		return fmt.Errorf("write swap end: %w", err)
	}
	return nil
}

// readSwapEnd reads the end offset writeSwapEnd recorded; ok is false when
// the file is missing or unreadable.
func readSwapEnd(path string) (end int64, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := fmt.Sscanf(string(data), "strata-swap-end 1\nend-offset %d\n", &end)
	if err != nil || n != 1 || end < 0 {
		return 0, false
	}
	return end, true
}

// removeFile removes path; a missing file is not an error.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
