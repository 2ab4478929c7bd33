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
// only, not CRCs.
type scanner struct {
	r        io.ReaderAt
	pos, end int64
	buf      []byte
	bufPos   int64
}

func newScanner(r io.ReaderAt, pos, end int64) *scanner {
	return &scanner{r: r, pos: pos, end: end}
}

// next returns the next header; io.EOF at end.
func (sc *scanner) next() (BatchHeader, error) {
	if sc.pos >= sc.end {
		return BatchHeader{}, io.EOF
	}
	if sc.end-sc.pos < record.HeaderSize {
		return BatchHeader{}, fmt.Errorf("%d bytes at %d are shorter than a batch header: %w", sc.end-sc.pos, sc.pos, ErrCorrupt)
	}
	hdr, err := sc.window(sc.pos, record.HeaderSize)
	if err != nil {
		return BatchHeader{}, err
	}
	h := parseHeader(record.Batch(hdr), sc.pos)
	if h.Size < record.HeaderSize || sc.pos+h.Size > sc.end || record.Batch(hdr).Magic() != record.Magic {
		return BatchHeader{}, fmt.Errorf("bad batch header at %d (size %d, end %d): %w", sc.pos, h.Size, sc.end, ErrCorrupt)
	}
	sc.pos += h.Size
	return h, nil
}

// window returns n bytes at file position pos, refilling the buffer when
// they are not in it.
func (sc *scanner) window(pos int64, n int) ([]byte, error) {
	if pos >= sc.bufPos && pos+int64(n) <= sc.bufPos+int64(len(sc.buf)) {
		return sc.buf[pos-sc.bufPos:][:n], nil
	}
	if sc.buf == nil {
		sc.buf = make([]byte, scanWindow)
	}
	want := min(int64(cap(sc.buf)), sc.end-pos)
	sc.buf = sc.buf[:want]
	got, err := sc.r.ReadAt(sc.buf, pos)
	if got < n {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("short read of %d bytes at %d: %w", got, pos, ErrCorrupt)
		}
		sc.buf = sc.buf[:0]
		return nil, fmt.Errorf("read batch header: %w", err)
	}
	sc.buf, sc.bufPos = sc.buf[:got], pos
	return sc.buf[:n], nil
}
