package segment

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/strata-broker/strata/tier/record"
)

// Recover scans the whole .log file, keeps the longest prefix of intact
// batches (framing, magic and CRC per record.ValidPrefix; offsets
// increasing and within the segment's 32-bit range), truncates the rest
// and rebuilds both indexes from the scan. It returns the number of bytes
// truncated. The rebuilt indexes are written and everything is fdatasynced.
func (s *Segment) Recover() (truncated int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	if err := s.pinLocked(); err != nil {
		return 0, fmt.Errorf("recover segment %s: %w", s.LogPath(), err)
	}
	st, err := s.file.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("recover segment %s: %w", s.LogPath(), err)
	}
	fileSize := st.Size()
	s.ixWrites++
	if err := s.ix.reset(); err != nil {
		return 0, fmt.Errorf("recover segment %s: %w", s.LogPath(), err)
	}
	s.size, s.next, s.maxTs, s.maxOff, s.sinceIndex, s.err = 0, s.base, -1, -1, 0, nil
	r := bufio.NewReaderSize(io.NewSectionReader(s.file.f, 0, fileSize), 64<<10)
	var buf []byte
	for {
		b, err := readBatch(r, fileSize-s.size, buf)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.log.Warn("truncating torn or corrupt segment tail", "segment", s.LogPath(),
					"position", s.size, "bytes", fileSize-s.size, "reason", err)
			}
			break
		}
		buf = b[:0]
		if err := s.checkOrder(b.BaseOffset(), b.LastOffset()); err != nil {
			s.log.Warn("truncating segment at an out-of-order batch", "segment", s.LogPath(), "position", s.size, "reason", err)
			break
		}
		s.track(parseHeader(b, s.size))
	}
	if s.size < fileSize {
		s.writes++
		if err := s.file.f.Truncate(s.size); err != nil {
			s.err = fmt.Errorf("recover segment %s: truncate: %w", s.LogPath(), err)
			return 0, s.err
		}
	}
	if err := datasync(s.file.f); err != nil {
		return 0, fmt.Errorf("recover segment %s: %w", s.LogPath(), err)
	}
	if _, err := s.ix.persist(); err != nil {
		return 0, fmt.Errorf("recover segment %s: %w", s.LogPath(), err)
	}
	if err := s.ix.sync(); err != nil {
		return 0, fmt.Errorf("recover segment %s: %w", s.LogPath(), err)
	}
	s.synced, s.ixSynced = s.writes, s.ixWrites
	s.unpinIfClean()
	return fileSize - s.size, nil
}

// readBatch reads the next batch from r, where remaining bytes are left in
// the file, reusing buf. io.EOF means a clean end; any other error a torn
// or corrupt batch.
func readBatch(r *bufio.Reader, remaining int64, buf []byte) (record.Batch, error) {
	if remaining == 0 {
		return nil, io.EOF
	}
	prefix, err := r.Peek(12)
	if err != nil {
		return nil, fmt.Errorf("partial batch prefix (%d bytes): %w", remaining, ErrCorrupt)
	}
	size := int64(record.Batch(prefix).BatchLength()) + 12
	if size < record.HeaderSize || size > remaining {
		return nil, fmt.Errorf("batch length %d with %d bytes left: %w", size, remaining, ErrCorrupt)
	}
	if int64(cap(buf)) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("read batch: %w", err)
	}
	if n, _ := record.ValidPrefix(buf); int64(n) != size {
		return nil, fmt.Errorf("batch fails its CRC or framing: %w", ErrCorrupt)
	}
	return record.Batch(buf), nil
}
