package remote

import (
	"context"
	"encoding/binary"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/record"
)

// OffsetForTimestamp finds, in the finished remote copies, the first
// record with a timestamp ≥ ts (ListOffsets by time) and returns its
// offset and timestamp; ok is false when every tiered record is older.
// The copy's time index positions the scan.
func (r *Reader) OffsetForTimestamp(ctx context.Context, id metadata.TopicID, partition int32, ts int64) (offset, recordTs int64, ok bool, err error) {
	segs, _ := r.m.segments(id, partition)
	for _, seg := range finished(segs) {
		if seg.MaxTimestamp < ts {
			continue
		}
		off, rts, found, err := r.findInSegment(ctx, seg, ts)
		if err != nil || found {
			return off, rts, found, err
		}
	}
	return 0, 0, false, nil
}

func (r *Reader) findInSegment(ctx context.Context, seg Segment, ts int64) (int64, int64, bool, error) {
	tidx, err := r.indexFile(ctx, seg, ".timeindex")
	if err != nil {
		return 0, 0, false, err
	}
	idx, err := r.index(ctx, seg)
	if err != nil {
		return 0, 0, false, err
	}
	// Time index entries (timestamp int64, relative offset uint32): the
	// batches up to rel are all older than ts for the last entry below ts.
	rel := int64(0)
	for i := 0; i+12 <= len(tidx); i += 12 {
		ets := int64(binary.BigEndian.Uint64(tidx[i:]))
		erel := int64(binary.BigEndian.Uint32(tidx[i+8:]))
		if ets >= ts || (i > 0 && ets == 0 && erel == 0) {
			break
		}
		rel = erel + 1
	}
	cur := &cursor{r: r, seg: seg, ctx: ctx, k: -1}
	defer cur.close()
	hdr := make([]byte, record.HeaderSize)
	for pos := lookup(idx, rel); pos+record.HeaderSize <= seg.Size; {
		if err := cur.readAt(hdr, pos); err != nil {
			return 0, 0, false, err
		}
		h := record.Batch(hdr)
		n := int64(h.BatchLength()) + 12
		if n < record.HeaderSize || pos+n > seg.Size {
			return 0, 0, false, ErrCorrupt
		}
		if h.MaxTimestamp() >= ts {
			buf := make([]byte, n)
			if err := cur.readAt(buf, pos); err != nil {
				return 0, 0, false, err
			}
			b := record.Batch(buf)
			if b.LogAppendTime() {
				return b.BaseOffset(), b.MaxTimestamp(), true, nil
			}
			recs, err := b.Records()
			if err != nil {
				return 0, 0, false, err
			}
			for _, rec := range recs {
				if t := b.FirstTimestamp() + rec.TimestampDelta; t >= ts {
					return b.BaseOffset() + int64(rec.OffsetDelta), t, true, nil
				}
			}
		}
		pos += n
	}
	return 0, 0, false, nil
}
