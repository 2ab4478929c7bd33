package local

import (
	"fmt"
	"sort"

	"github.com/strata-broker/strata/tier/segment"
)

// segmentFor returns the index of the segment whose range holds offset:
// the last one with a base ≤ offset, or 0. Caller holds mu.
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].BaseOffset() > offset })
	return max(i-1, 0)
}

// Read returns whole batches starting with the one holding offset: at
// least one batch even if it exceeds maxBytes, more while they fit, all
// below maxOffset (exclusive, normally the high watermark; < 0 or past the
// log end means the log end). Offsets outside [LogStartOffset,
// LogEndOffset] are ErrOffsetOutOfRange; offset ≥ maxOffset yields an
// empty Slice. The mutex is held only to find the segment and compute the
// Slice; the caller writes it out and Releases it without the lock.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64) (segment.Slice, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return segment.Slice{}, ErrClosed
	}
	leo, start := l.leo.Load(), l.logStart.Load()
	if offset < start || offset > leo {
		return segment.Slice{}, fmt.Errorf("read offset %d outside [%d, %d]: %w", offset, start, leo, ErrOffsetOutOfRange)
	}
	if maxOffset < 0 || maxOffset > leo {
		maxOffset = leo
	}
	// A segment may end below the next one's base (compacted or follower
	// gaps), so an empty answer moves on to the next segment.
	for i := l.segmentFor(offset); i < len(l.segs) && offset < maxOffset; i++ {
		s := l.segs[i]
		maxPos := int64(-1)
		if maxOffset < s.NextOffset() {
			pos, err := s.Position(maxOffset)
			if err != nil {
				return segment.Slice{}, fmt.Errorf("read offset %d: %w", offset, err)
			}
			maxPos = pos
		}
		sl, err := s.Read(offset, maxBytes, maxPos)
		if err != nil || sl.Len > 0 {
			return sl, err
		}
	}
	return segment.Slice{}, nil
}

// OnOlderSegment reports whether a Read at offset stops at the end of a
// segment older than the one holding endOffset (Kafka's
// LogOffsetMetadata.onOlderSegment, with the fetch offset placed where
// Read finds its first batch). A read never crosses a segment's end, so
// nothing appended at endOffset or later can join it: a fetch waiting for
// more bytes there would wait in vain. False when offset ≥ endOffset.
func (l *Log) OnOlderSegment(offset, endOffset int64) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed || offset >= endOffset {
		return false
	}
	end := l.segmentFor(endOffset)
	// As Read, pass over segments that hold no batch at or after offset.
	for i := l.segmentFor(offset); i < end; i++ {
		if l.segs[i].NextOffset() > offset {
			return true
		}
	}
	return false
}

// OffsetForTimestamp finds the first record at or after the log start with
// a timestamp ≥ ts (ListOffsets by time) and returns its offset and
// timestamp; ok is false when every record is older.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, batchTs int64, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, 0, false
	}
	start := l.logStart.Load()
	for _, s := range l.segs {
		if s.MaxTimestamp() < ts || s.NextOffset() <= start {
			continue
		}
		off, rts, found, err := s.FindTimestamp(ts, start)
		if err != nil {
			l.logger.Warn("timestamp look-up failed", "segment", s.BaseOffset(), "err", err)
			continue
		}
		if found {
			return off, rts, true
		}
	}
	return 0, 0, false
}

// MaxTimestamp returns the largest timestamp in the log and the offset of
// the first record carrying it (ListOffsets MAX_TIMESTAMP, KIP-734), or
// (-1, -1) for an empty log.
func (l *Log) MaxTimestamp() (ts int64, offset int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return -1, -1
	}
	start := l.logStart.Load()
	var best *segment.Segment
	ts = -1
	for _, s := range l.segs {
		if m := s.MaxTimestamp(); m > ts && s.NextOffset() > start {
			best, ts = s, m
		}
	}
	if best == nil {
		return -1, -1
	}
	off, _, found, err := best.FindTimestamp(ts, start)
	if err != nil || !found {
		return ts, -1
	}
	return ts, off
}
