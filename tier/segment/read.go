package segment

import (
	"fmt"
	"io"
	"iter"

	"github.com/strata-broker/strata/tier/record"
)

// relative converts an absolute offset to one relative to the segment
// base, clamped to the uint32 range of the indexes.
func (s *Segment) relative(offset int64) uint32 {
	switch d := offset - s.base; {
	case d <= 0:
		return 0
	case d > int64(^uint32(0)):
		return ^uint32(0)
	default:
		return uint32(d)
	}
}

// locate finds the first batch of f below end whose last offset is ≥
// offset, starting from the offset index. ok is false when there is none.
// Caller holds mu.
func (s *Segment) locate(f io.ReaderAt, offset, end int64) (h BatchHeader, sc *scanner, ok bool, err error) {
	sc = newScanner(f, min(s.ix.lookupPos(s.relative(offset)), end), end)
	for {
		h, err = sc.next()
		if err == io.EOF {
			return h, sc, false, nil
		}
		if err != nil {
			return h, sc, false, fmt.Errorf("segment %s: %w", s.LogPath(), err)
		}
		if h.LastOffset >= offset {
			return h, sc, true, nil
		}
	}
}

// position is the position of the first batch of f whose last offset is
// ≥ offset, or end when there is none. Caller holds mu.
func (s *Segment) position(f io.ReaderAt, offset, end int64) (int64, error) {
	h, _, ok, err := s.locate(f, offset, end)
	if err != nil || !ok {
		return end, err
	}
	return h.Pos, nil
}

// Position returns the file position of the batch holding offset (the
// first batch whose last offset is ≥ offset), or Size when offset is past
// the segment's last batch. The log uses it to turn the high watermark into
// a read bound.
func (s *Segment) Position(offset int64) (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, ErrClosed
	}
	if offset >= s.next {
		return s.size, nil
	}
	r, err := s.acquireFile()
	if err != nil {
		return 0, err
	}
	defer r.release()
	return s.position(r.f, offset, s.size)
}

// Read returns whole batches starting with the batch holding offset (the
// first batch whose last offset is ≥ offset), adding batches while the
// total stays within maxBytes but always including the first one (KIP-74),
// and never reaching past maxPosition (a batch boundary; < 0 means the end
// of the segment). An empty Slice means no batch qualifies.
func (s *Segment) Read(offset int64, maxBytes int, maxPosition int64) (Slice, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return Slice{}, ErrClosed
	}
	end := s.size
	if maxPosition >= 0 && maxPosition < end {
		end = maxPosition
	}
	if offset >= s.next || end == 0 {
		return Slice{}, nil
	}
	r, err := s.acquireFile()
	if err != nil {
		return Slice{}, err
	}
	first, sc, ok, err := s.locate(r.f, offset, end)
	if err != nil || !ok {
		_ = r.release()
		return Slice{}, err
	}
	n := first.Size
	for n < int64(maxBytes) {
		h, err := sc.next()
		if err == io.EOF || (err == nil && n+h.Size > int64(maxBytes)) {
			break
		}
		if err != nil {
			_ = r.release()
			return Slice{}, fmt.Errorf("read segment %s: %w", s.LogPath(), err)
		}
		n += h.Size
	}
	return r.slice(first.Pos, n), nil
}

// FindTimestamp returns the offset and timestamp of the first record at or
// after minOffset whose timestamp is ≥ ts (ListOffsets by time). It starts
// from the time index, scans batch headers for the first batch whose max
// timestamp qualifies and decodes only that batch's records. ok is false
// when no record in the segment qualifies.
func (s *Segment) FindTimestamp(ts, minOffset int64) (offset, recordTs int64, ok bool, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, 0, false, ErrClosed
	}
	if s.maxTs < ts {
		return 0, 0, false, nil
	}
	r, err := s.acquireFile()
	if err != nil {
		return 0, 0, false, err
	}
	defer r.release()
	start := max(minOffset, s.base+int64(s.ix.lookupTime(ts)))
	h, sc, found, err := s.locate(r.f, start, s.size)
	for ; found && err == nil; h, err = sc.next() {
		if h.MaxTimestamp < ts || h.LastOffset < minOffset {
			continue
		}
		if offset, recordTs, ok, err = s.findInBatch(r.f, h, ts, minOffset); ok || err != nil {
			return offset, recordTs, ok, err
		}
	}
	if err != nil && err != io.EOF {
		return 0, 0, false, fmt.Errorf("find timestamp in segment %s: %w", s.LogPath(), err)
	}
	return 0, 0, false, nil
}

// findInBatch looks for the first record of the batch at h with offset ≥
// minOffset and timestamp ≥ ts. When the records cannot be decoded it
// answers with the batch itself (its first offset ≥ minOffset and its max
// timestamp), which is still a batch a consumer may start from.
func (s *Segment) findInBatch(f io.ReaderAt, h BatchHeader, ts, minOffset int64) (int64, int64, bool, error) {
	buf := make([]byte, h.Size)
	if _, err := f.ReadAt(buf, h.Pos); err != nil {
		return 0, 0, false, fmt.Errorf("read batch at %d: %w", h.Pos, err)
	}
	b := record.Batch(buf)
	recs, err := b.Records()
	if err != nil {
		s.log.Warn("cannot decode batch for timestamp look-up", "segment", s.LogPath(), "offset", h.BaseOffset, "err", err)
		return max(h.BaseOffset, minOffset), h.MaxTimestamp, true, nil
	}
	for _, r := range recs {
		if off, rts := b.Offset(r), b.Timestamp(r); off >= minOffset && rts >= ts {
			return off, rts, true, nil
		}
	}
	return 0, 0, false, nil
}

// Batches iterates over the headers of the batches whose last offset is ≥
// from, as of the call (later appends are not seen). The iteration holds a
// reference to the file, not the segment lock, so the caller must keep the
// segment from being truncated meanwhile (the partition log's lock does).
func (s *Segment) Batches(from int64) iter.Seq2[BatchHeader, error] {
	return func(yield func(BatchHeader, error) bool) {
		s.mu.RLock()
		if s.closed {
			s.mu.RUnlock()
			yield(BatchHeader{}, ErrClosed)
			return
		}
		r, err := s.acquireFile()
		if err != nil {
			s.mu.RUnlock()
			yield(BatchHeader{}, err)
			return
		}
		defer r.release()
		h, sc, ok, err := s.locate(r.f, from, s.size)
		s.mu.RUnlock()
		for ; ok && err == nil; h, err = sc.next() {
			if !yield(h, nil) {
				return
			}
		}
		if err != nil && err != io.EOF {
			yield(BatchHeader{}, fmt.Errorf("scan segment %s: %w", s.LogPath(), err))
		}
	}
}

// ReadAll returns a Slice over every batch of the segment, without
// looking at them (the log cleaner reads sealed segments whole).
func (s *Segment) ReadAll() (Slice, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return Slice{}, ErrClosed
	}
	r, err := s.acquireFile()
	if err != nil {
		return Slice{}, err
	}
	return r.slice(0, s.size), nil
}
