package compaction

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// batchReader reads the whole batches of a segment Slice in order,
// through a buffer of the cleaner thread, checking framing and CRC (the
// cleaner never copies a corrupt batch into a new segment). The batch it
// returns aliases a buffer reused by the next call.
type batchReader struct {
	r     *bufio.Reader
	left  int64
	buf   []byte
	thr   *throttler
	ctx   context.Context
	bytes int64 // read so far
}

// reset points the reader at sl, reusing its buffers.
func (br *batchReader) reset(ctx context.Context, sl segment.Slice, thr *throttler) {
	br.r.Reset(io.NewSectionReader(sl.File, sl.Pos, sl.Len))
	br.left, br.thr, br.ctx = sl.Len, thr, ctx
}

// next returns the next batch; io.EOF at the end of the Slice.
func (br *batchReader) next() (record.Batch, error) {
	if br.left == 0 {
		return nil, io.EOF
	}
	if err := br.ctx.Err(); err != nil {
		return nil, err
	}
	prefix, err := br.r.Peek(12)
	if err != nil {
		return nil, fmt.Errorf("read batch prefix: %w", err)
	}
	size := int64(int32(binary.BigEndian.Uint32(prefix[8:]))) + 12
	if size < record.HeaderSize || size > br.left {
		return nil, fmt.Errorf("batch of %d bytes with %d left in the segment: %w", size, br.left, record.ErrCorrupt)
	}
	if int64(cap(br.buf)) < size {
		br.buf = make([]byte, size)
	}
	b := record.Batch(br.buf[:size])
	if _, err := io.ReadFull(br.r, b); err != nil {
		return nil, fmt.Errorf("read batch: %w", err)
	}
	br.left -= size
	br.bytes += size
	if n, _ := record.ValidPrefix(b); int64(n) != size {
		return nil, fmt.Errorf("batch at offset %d fails its CRC or framing: %w", b.BaseOffset(), record.ErrCorrupt)
	}
	if err := br.thr.add(br.ctx, int(size)); err != nil {
		return nil, err
	}
	return b, nil
}
