package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BuildOptions describes the header of a batch made by Build.
type BuildOptions struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	Codec                Codec
	// FirstTimestamp is the base of the records' TimestampDelta; the
	// batch's MaxTimestamp is derived from the records.
	FirstTimestamp int64
	// LastOffsetDelta overrides the stored last offset delta, for batches
	// whose tail records were compacted away; 0 means the largest
	// OffsetDelta of the records.
	LastOffsetDelta int32
	// LogAppendTime sets the timestamp-type bit only; the broker stamps the
	// time with Batch.SetLogAppendTime.
	LogAppendTime bool
	Transactional bool
	Control       bool
	// Idempotent writes ProducerID, ProducerEpoch and BaseSequence; without
	// it all three are stored as -1 ("no producer").
	Idempotent    bool
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	// Buf, when its capacity holds the uncompressed batch, is where Build
	// writes it (so that callers can reuse one buffer); the batch then
	// aliases Buf.
	Buf []byte
}

// compressors holds one lazily built kgo compressor per codec; they pool
// their encoders and are safe for concurrent use.
var compressors [Zstd + 1]func() (kgo.Compressor, error)

func init() {
	codecs := [...]kgo.CompressionCodec{
		Gzip:   kgo.GzipCompression(),
		Snappy: kgo.SnappyCompression(),
		LZ4:    kgo.Lz4Compression(),
		Zstd:   kgo.ZstdCompression(),
	}
	for c := Gzip; c <= Zstd; c++ {
		codec := codecs[c]
		compressors[c] = sync.OnceValues(func() (kgo.Compressor, error) {
			return kgo.DefaultCompressor(codec)
		})
	}
}

// Build encodes recs into a new batch with a valid CRC. Records keep their
// OffsetDelta, except that when every OffsetDelta is zero they are numbered
// 0..n-1, which is what a producer would send. The compaction cleaner uses
// Build to rewrite batches; tests and tools use it (or NewBatch) to make
// them.
func Build(opts BuildOptions, recs []Record) (Batch, error) {
	if opts.Codec < None || opts.Codec > Zstd {
		return nil, fmt.Errorf("build batch: unknown codec %d: %w", opts.Codec, ErrCorrupt)
	}
	number := true
	for i := range recs {
		if recs[i].OffsetDelta != 0 {
			number = false
			break
		}
	}
	size := 0
	for i := range recs {
		size += encodedSize(&recs[i], offsetDelta(recs, i, number))
	}
	var body []byte
	if cap(opts.Buf) >= HeaderSize+size {
		body = opts.Buf[:HeaderSize]
	} else {
		body = make([]byte, HeaderSize, HeaderSize+size)
	}
	var lastDelta int32
	maxTS := opts.FirstTimestamp // Kafka: the largest record timestamp
	if len(recs) > 0 {
		maxTS = math.MinInt64
	}
	for i := range recs {
		d := offsetDelta(recs, i, number)
		body = appendRecord(body, &recs[i], d)
		lastDelta = max(lastDelta, d)
		maxTS = max(maxTS, opts.FirstTimestamp+recs[i].TimestampDelta)
	}
	if opts.LastOffsetDelta != 0 {
		lastDelta = opts.LastOffsetDelta
	}
	if opts.Codec != None {
		comp, err := compressors[opts.Codec]()
		if err != nil {
			return nil, fmt.Errorf("build batch: %s compressor: %w", opts.Codec, err)
		}
		var buf bytes.Buffer
		out, used := comp.Compress(&buf, body[HeaderSize:])
		if used != kgo.CompressionCodecType(opts.Codec) {
			return nil, fmt.Errorf("build batch: %s compression failed", opts.Codec)
		}
		body = append(body[:HeaderSize], out...)
	}

	b := Batch(body)
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(opts.BaseOffset))
	be.PutUint32(b[offBatchLength:], uint32(len(b)-lengthPrefix))
	be.PutUint32(b[offLeaderEpoch:], uint32(opts.PartitionLeaderEpoch))
	b[offMagic] = Magic
	be.PutUint16(b[offAttributes:], uint16(opts.attributes()))
	be.PutUint32(b[offLastOffsetDelta:], uint32(lastDelta))
	be.PutUint64(b[offFirstTimestamp:], uint64(opts.FirstTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTS))
	pid, epoch, seq := int64(-1), int16(-1), int32(-1)
	if opts.Idempotent {
		pid, epoch, seq = opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence
	}
	be.PutUint64(b[offProducerID:], uint64(pid))
	be.PutUint16(b[offProducerEpoch:], uint16(epoch))
	be.PutUint32(b[offBaseSequence:], uint32(seq))
	be.PutUint32(b[offNumRecords:], uint32(len(recs)))
	b.updateCRC()
	return b, nil
}

// NewBatch is Build for tests and tools, taking records as arguments. It
// panics if Build fails, which only an out-of-range Codec causes.
func NewBatch(opts BuildOptions, recs ...Record) Batch {
	b, err := Build(opts, recs)
	if err != nil {
		panic(err)
	}
	return b
}

func (o *BuildOptions) attributes() int16 {
	a := int16(o.Codec) & attrCodecMask
	if o.LogAppendTime {
		a |= attrLogAppendTime
	}
	if o.Transactional {
		a |= attrTransactional
	}
	if o.Control {
		a |= attrControl
	}
	return a
}

func offsetDelta(recs []Record, i int, number bool) int32 {
	if number {
		return int32(i)
	}
	return recs[i].OffsetDelta
}

// varintSize is the encoded size of v as a zig-zag varint.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// bytesSize is the encoded size of a length-prefixed, nullable byte string.
func bytesSize(v []byte) int {
	if v == nil {
		return varintSize(-1)
	}
	return varintSize(int64(len(v))) + len(v)
}

// bodySize is the size of a record after its length prefix.
func bodySize(r *Record, delta int32) int {
	n := 1 + varintSize(r.TimestampDelta) + varintSize(int64(delta)) +
		bytesSize(r.Key) + bytesSize(r.Value) + varintSize(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintSize(int64(len(h.Key))) + len(h.Key) + bytesSize(h.Value)
	}
	return n
}

func encodedSize(r *Record, delta int32) int {
	body := bodySize(r, delta)
	return varintSize(int64(body)) + body
}

func appendBytes(dst, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(dst, -1)
	}
	return append(binary.AppendVarint(dst, int64(len(v))), v...)
}

// appendRecord appends r, with the given offset delta, in the v2 record
// encoding.
func appendRecord(dst []byte, r *Record, delta int32) []byte {
	dst = binary.AppendVarint(dst, int64(bodySize(r, delta)))
	dst = append(dst, 0) // attributes
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(delta))
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendBytes(dst, h.Value)
	}
	return dst
}
