package segment

import (
	"errors"
	"fmt"
	"io"

	"github.com/strata-broker/strata/tier/record"
)

// BatchHeader is what a scan learns from a batch's fixed header without
// reading its records.
type BatchHeader struct {
	Pos           int64 // position in the .log file
	Size          int64 // whole batch, including the 12-byte prefix
	BaseOffset    int64
	LastOffset    int64
	MaxTimestamp  int64
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	LastSequence  int32
	Transactional bool
	Control       bool
	LeaderEpoch   int32 // the batch's PartitionLeaderEpoch
}

// ParseHeader decodes a batch's header (the first record.HeaderSize bytes
// suffice); Pos is 0.
func ParseHeader(b record.Batch) BatchHeader { return parseHeader(b, 0) }

// parseHeader decodes the HeaderSize bytes of the batch at pos.
func parseHeader(h record.Batch, pos int64) BatchHeader {
	return BatchHeader{
		Pos:           pos,
		Size:          int64(h.BatchLength()) + 12,
		BaseOffset:    h.BaseOffset(),
		LastOffset:    h.LastOffset(),
		MaxTimestamp:  h.MaxTimestamp(),
		ProducerID:    h.ProducerID(),
		ProducerEpoch: h.ProducerEpoch(),
		BaseSequence:  h.BaseSequence(),
		LastSequence:  h.LastSequence(),
		Transactional: h.IsTransactional(),
		Control:       h.IsControl(),
		LeaderEpoch:   h.PartitionLeaderEpoch(),
	}
}

// scanWindow is how much of the file a scanner reads at once; headers of
// small batches are then parsed without a syscall each.
const scanWindow = 16 << 10

// scanner walks the batch headers of [pos, end) of a log file, which must
// hold whole batches (recovery establishes that). It checks the framing
// only, not CRCs. Behind a batch of half a window or more it reads just
// the next header: a window there would copy mostly record bytes.
type scanner struct {
	r        io.ReaderAt
	pos, end int64
	buf      []byte // the window, allocated when batches are small
	bufPos   int64
	big      bool // the last batch was large: read headers alone
	hdr      [record.HeaderSize]byte
}

func newScanner(r io.ReaderAt, pos, end int64) *scanner {
	return &scanner{r: r, pos: pos, end: end, big: true}
}

// next returns the next header; io.EOF at end.
func (sc *scanner) next() (BatchHeader, error) {
	if sc.pos >= sc.end {
		return BatchHeader{}, io.EOF
	}
	if sc.end-sc.pos < record.HeaderSize {
		return BatchHeader{}, fmt.Errorf("%d bytes at %d are shorter than a batch header: %w", sc.end-sc.pos, sc.pos, ErrCorrupt)
	}
	hdr, err := sc.header(sc.pos)
	if err != nil {
		return BatchHeader{}, err
	}
	h := parseHeader(record.Batch(hdr), sc.pos)
	if h.Size < record.HeaderSize || sc.pos+h.Size > sc.end || record.Batch(hdr).Magic() != record.Magic {
		return BatchHeader{}, fmt.Errorf("bad batch header at %d (size %d, end %d): %w", sc.pos, h.Size, sc.end, ErrCorrupt)
	}
	sc.pos += h.Size
	sc.big = h.Size >= scanWindow/2
	return h, nil
}

// header returns the record.HeaderSize bytes at file position pos: from
// the window when they are in it, else read alone (after a large batch)
// or with a refilled window.
func (sc *scanner) header(pos int64) ([]byte, error) {
	const n = record.HeaderSize
	if pos >= sc.bufPos && pos+n <= sc.bufPos+int64(len(sc.buf)) {
		return sc.buf[pos-sc.bufPos:][:n], nil
	}
	dst := sc.hdr[:]
	if !sc.big {
		if sc.buf == nil {
			sc.buf = make([]byte, scanWindow)
		}
		dst = sc.buf[:min(int64(cap(sc.buf)), sc.end-pos)]
	}
	got, err := sc.r.ReadAt(dst, pos)
	if got < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("short read of %d bytes at %d: %w", got, pos, ErrCorrupt)
		}
		if !sc.big {
			sc.buf = sc.buf[:0]
		}
		return nil, fmt.Errorf("read batch header: %w", err)
	}
	if !sc.big {
		sc.buf, sc.bufPos = sc.buf[:got], pos
	}
	return dst[:n], nil
}
