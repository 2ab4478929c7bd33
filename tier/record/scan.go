package record

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// scanner checks the framing of a records area without keeping it, as
// Kafka's LogValidator does with its streaming record iterator: an
// uncompressed area is one piece in memory, a compressed one arrives in
// pieces read from its decompressor, so a record may span pieces and a
// key or value is skipped rather than held.
type scanner struct {
	cur []byte    // unread bytes of the current piece
	r   io.Reader // where further pieces come from; nil when none will
	buf []byte    // what pieces are read into
	// pieces, when set, hands pieces out in place instead of r.
	pieces interface{ piece(max int) ([]byte, error) }
	pos    int64 // bytes consumed so far
	err    error // why r stopped early; nil when it reached its end
}

// newScanner scans what r decompresses, in pieces of up to len(buf) bytes:
// read into buf, or taken in place when the decoder allows.
func newScanner(r *limitReader, buf []byte) scanner {
	s := scanner{r: r, buf: buf}
	if r.pieces() {
		s.pieces = r
	}
	return s
}

// scanOptions are the checks scan makes beyond framing and count.
type scanOptions struct {
	// requireKeys rejects null keys (compacted topics).
	requireKeys bool
	// inOrder requires the records' offset deltas to be 0..n-1. Kafka
	// rewrites a compressed batch whose deltas are not, so its consumers
	// never see one; the broker stores batches as they come, so it
	// refuses such a compressed batch instead. Uncompressed batches are
	// stored as they are, as in Kafka.
	inOrder bool
}

// scan checks that the data holds exactly n well-formed records, and
// reads the data to its end, where a decompressor verifies its checksum.
// Bad framing or undecodable data is ErrCorrupt, a record count that
// disagrees with the data or an offset delta out of order is
// ErrInvalidRecord, data over the reader's limit is ErrTooLarge.
func (s *scanner) scan(n int32, o scanOptions) error {
	for i := range n {
		if !s.fill() {
			if s.err != nil {
				return s.err
			}
			return fmt.Errorf("batch declares %d records but holds %d: %w", n, i, ErrInvalidRecord)
		}
		null, delta, err := s.record()
		switch {
		case err != nil:
			return fmt.Errorf("record %d of %d: %w", i, n, err)
		case o.inOrder && delta != i:
			return fmt.Errorf("record %d of %d has offset delta %d: %w", i, n, delta, ErrInvalidRecord)
		case o.requireKeys && null:
			return fmt.Errorf("record %d has a null key, which a compacted topic refuses: %w", i, ErrInvalidRecord)
		}
	}
	if s.fill() {
		return fmt.Errorf("data left after the last of %d records: %w", n, ErrInvalidRecord)
	}
	return s.err
}

// record checks the record at the scanner's position, reporting whether
// its key is null and its offset delta.
func (s *scanner) record() (nullKey bool, delta int32, err error) {
	length, ok := s.varint()
	if !ok || length < 0 {
		return false, 0, s.fault("bad record length")
	}
	end := s.pos + int64(length)
	_, ok = s.byte() // attributes: unused in v2
	if ok {
		_, ok = s.varlong() // timestampDelta
	}
	if ok {
		delta, ok = s.varint()
	}
	if !ok {
		return false, 0, s.fault("malformed record fields")
	}
	keyLen, ok := s.bytes(end, true)
	if ok {
		_, ok = s.bytes(end, true) // value
	}
	var count int32
	if ok {
		count, ok = s.varint()
	}
	if !ok || count < 0 || int64(count) > (end-s.pos)/2 {
		return false, 0, s.fault("malformed record fields")
	}
	for i := range count {
		_, ok = s.bytes(end, false) // key
		if ok {
			_, ok = s.bytes(end, true) // value
		}
		if !ok {
			return false, 0, s.fault(fmt.Sprintf("malformed header %d", i))
		}
	}
	if s.pos != end {
		return false, 0, s.fault(fmt.Sprintf("record length %d disagrees with its fields", length))
	}
	return keyLen < 0, delta, nil
}

// fault is the error of a record that failed to parse: the reader's error
// when the data ended early because of it, else bad framing.
func (s *scanner) fault(what string) error {
	if s.err != nil {
		return s.err
	}
	return fmt.Errorf("%s: %w", what, ErrCorrupt)
}

// fill makes the current piece non-empty, reading the next one when
// needed; false at the end of the data (s.err tells whether it ended
// early).
func (s *scanner) fill() bool {
	for len(s.cur) == 0 {
		if s.r == nil {
			return false
		}
		var err error
		if s.pieces != nil {
			s.cur, err = s.pieces.piece(len(s.buf))
		} else {
			var n int
			n, err = s.r.Read(s.buf)
			s.cur = s.buf[:n]
		}
		if err != nil {
			s.r = nil
			if err != io.EOF {
				s.err = err
				s.cur = nil
			}
		}
	}
	return true
}

func (s *scanner) advance(n int) {
	s.cur = s.cur[n:]
	s.pos += int64(n)
}

func (s *scanner) byte() (byte, bool) {
	if !s.fill() {
		return 0, false
	}
	c := s.cur[0]
	s.advance(1)
	return c, true
}

// varlong reads a zig-zag varint of up to 64 bits.
func (s *scanner) varlong() (int64, bool) {
	if len(s.cur) >= binary.MaxVarintLen64 {
		v, n := binary.Varint(s.cur)
		if n <= 0 {
			return 0, false
		}
		s.advance(n)
		return v, true
	}
	// Near the end of a piece: byte by byte, as binary.Uvarint decodes.
	var ux uint64
	for i := range binary.MaxVarintLen64 {
		c, ok := s.byte()
		if !ok || (i == binary.MaxVarintLen64-1 && c > 1) {
			return 0, false
		}
		ux |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			v := int64(ux >> 1)
			if ux&1 != 0 {
				v = ^v
			}
			return v, true
		}
	}
	return 0, false
}

// varint reads a zig-zag varint that must fit 32 bits.
func (s *scanner) varint() (int32, bool) {
	v, ok := s.varlong()
	if !ok || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, false
	}
	return int32(v), true
}

// bytes skips a length-prefixed byte string that must end by end, and
// returns its length (-1 for null, allowed when nullable).
func (s *scanner) bytes(end int64, nullable bool) (int32, bool) {
	l, ok := s.varint()
	switch {
	case !ok:
		return 0, false
	case l == -1 && nullable:
		return l, true
	case l < 0 || int64(l) > end-s.pos:
		return 0, false
	}
	for left := int(l); left > 0; {
		if !s.fill() {
			return 0, false
		}
		n := min(left, len(s.cur))
		s.advance(n)
		left -= n
	}
	return l, true
}
