package record

import (
	"errors"
	"fmt"

	"github.com/strata-broker/strata/internal/benchhook"
)

// Sentinel errors. The broker maps them to Kafka error codes at its edge.
var (
	// ErrCorrupt: bad framing, CRC mismatch, unknown codec or an unparsable
	// records area (Kafka's CORRUPT_MESSAGE).
	ErrCorrupt = errors.New("record: corrupt batch")
	// ErrUnsupportedMagic: a v0/v1 message set where a v2 batch was needed.
	// Kafka's produce v3+ rejects these as INVALID_RECORD; older produce
	// versions would answer UNSUPPORTED_FOR_MESSAGE_FORMAT.
	ErrUnsupportedMagic = errors.New("record: unsupported message format (magic < 2)")
	// ErrTooLarge: the batch exceeds the topic's max.message.bytes as
	// received, or decompresses beyond InflateFactor times it or
	// MaxDecompressedBytes (Kafka's MESSAGE_TOO_LARGE).
	ErrTooLarge = errors.New("record: batch too large")
	// ErrInvalidRecord: a well-formed batch that Kafka's LogValidator refuses
	// from a client, such as one holding fewer or more records than its
	// header says (Kafka's INVALID_RECORD).
	ErrInvalidRecord = errors.New("record: invalid record")
	// ErrTruncated: the data ends inside a batch its length field
	// announces. Errors wrapping it wrap ErrCorrupt too (a torn log tail);
	// Kafka's produce, finding no whole batch, answers INVALID_RECORD.
	ErrTruncated = errors.New("record: truncated batch")
)

// ValidateOptions tunes Validate for one topic.
type ValidateOptions struct {
	// MaxBatchBytes is the largest accepted batch size in bytes
	// (max.message.bytes) as received; a compressed batch's records may
	// inflate to InflateFactor times it (at most MaxDecompressedBytes).
	// 0 means MaxDecompressedBytes uncompressed and no other limit.
	MaxBatchBytes int
	// RequireKeys rejects records with a null key (compacted topics).
	RequireKeys bool
	// AllowControl accepts control batches; clients may not write them, so
	// only the broker's own writers set this.
	AllowControl bool
}

// Validate checks one batch received from a producer, in the order Kafka
// does: framing and magic, size, CRC-32C, codec, record count against the
// offset range, control flag, producer sequence, and then the records
// themselves: that there are as many as the header says, each framed
// correctly, with keys when required, and in a compressed batch with
// offset deltas 0..n-1.
//
// A compressed batch is decompressed as a stream and never held whole;
// decompression stops past MaxBatchBytes of output (ErrTooLarge: Kafka
// puts no bound on it, but every consumer that fetches such a batch must
// inflate it) and waits for one of the process's decompression slots. A
// valid uncompressed batch is checked without allocating.
//
// Compacted batches legitimately hold fewer records than their offset
// range, so replication and recovery check batches with [ValidPrefix] and
// [Batch.CheckCRC] rather than Validate.
func Validate(b Batch, o ValidateOptions) error {
	if err := checkFrame(b); err != nil {
		return err
	}
	if o.MaxBatchBytes > 0 && len(b) > o.MaxBatchBytes {
		return fmt.Errorf("batch of %d bytes exceeds the limit of %d: %w", len(b), o.MaxBatchBytes, ErrTooLarge)
	}
	if err := b.CheckCRC(); err != nil {
		return err
	}
	c := b.Codec()
	if c > Zstd {
		return fmt.Errorf("unknown compression codec %d: %w", c, ErrCorrupt)
	}
	n, last := b.NumRecords(), b.LastOffsetDelta()
	switch {
	case last < 0:
		return fmt.Errorf("invalid offset range: last offset delta %d: %w", last, ErrInvalidRecord)
	case n <= 0:
		return fmt.Errorf("invalid record count %d: %w", n, ErrInvalidRecord)
	case int64(n) != int64(last)+1:
		return fmt.Errorf("last offset delta %d inconsistent with record count %d: %w", last, n, ErrInvalidRecord)
	case b.IsControl() && !o.AllowControl:
		return fmt.Errorf("clients may not write control batches: %w", ErrInvalidRecord)
	case b.ProducerID() >= 0 && b.BaseSequence() < 0 && !b.IsControl():
		// Markers carry no sequence (Kafka's NO_SEQUENCE); only the
		// broker writes them, as AllowControl says.
		return fmt.Errorf("invalid sequence %d for producer id %d: %w", b.BaseSequence(), b.ProducerID(), ErrInvalidRecord)
	}
	if c == None {
		s := scanner{cur: b[HeaderSize:]}
		return s.scan(n, scanOptions{requireKeys: o.RequireKeys})
	}
	if !o.RequireKeys && benchhook.SkipCompressedRecords.Load() {
		return nil
	}
	sl := acquire()
	defer sl.release()
	r, err := sl.open(c, b[HeaderSize:], recordsLimit(o.MaxBatchBytes))
	if err == nil {
		s := newScanner(r, sl.buf)
		err = s.scan(n, scanOptions{requireKeys: o.RequireKeys, inOrder: true})
	}
	if err != nil {
		return fmt.Errorf("%s records: %w", c, err)
	}
	return nil
}

// InflateFactor is how many times max.message.bytes a compressed batch's
// records may decompress to. Kafka limits only the batch as received,
// and its Java producer fills a batch by estimated compressed size, so a
// batch of compressible records legitimately holds several times the
// limit; the factor keeps those while a decompression bomb still stops
// at a size a consumer can hold.
const InflateFactor = 16

// recordsLimit is the largest decompressed records area of a batch under
// maxBatchBytes (0: no limit but MaxDecompressedBytes).
func recordsLimit(maxBatchBytes int) int {
	if maxBatchBytes <= 0 {
		return MaxDecompressedBytes
	}
	return max(0, min(InflateFactor*maxBatchBytes, MaxDecompressedBytes))
}

// CheckCRC reports ErrCorrupt when the stored CRC does not match the
// batch's bytes. The caller must have checked the framing.
func (b Batch) CheckCRC() error {
	if len(b) < HeaderSize {
		return fmt.Errorf("batch of %d bytes is shorter than its header: %w", len(b), ErrCorrupt)
	}
	if stored, computed := b.CRC(), b.computeCRC(); stored != computed {
		return fmt.Errorf("crc mismatch: stored %08x, computed %08x: %w", stored, computed, ErrCorrupt)
	}
	return nil
}

// checkFrame verifies the magic byte and that the length field describes
// exactly this slice.
func checkFrame(b Batch) error {
	if len(b) <= offMagic {
		return fmt.Errorf("batch of %d bytes is shorter than its header: %w", len(b), ErrCorrupt)
	}
	switch m := b.Magic(); {
	case m == 0 || m == 1:
		return fmt.Errorf("magic %d: %w", m, ErrUnsupportedMagic)
	case m != Magic:
		return fmt.Errorf("unknown magic %d: %w", m, ErrCorrupt)
	}
	if len(b) < HeaderSize {
		return fmt.Errorf("batch of %d bytes is shorter than its header: %w", len(b), ErrCorrupt)
	}
	if l := b.BatchLength(); l < minBatchLength || int64(l)+lengthPrefix != int64(len(b)) {
		return fmt.Errorf("batch length field %d does not match %d bytes: %w", l, len(b), ErrCorrupt)
	}
	return nil
}

// legacyMinLength is the smallest length field of a v0/v1 message
// (Kafka's LegacyRecord.RECORD_OVERHEAD_V0); Kafka calls an entry
// announcing less corrupt whatever its magic.
const legacyMinLength = 14

// frameLen returns the size of the batch starting at buf[0] according to
// its length field, or an error when buf cannot hold a whole batch. It
// checks in the order of Kafka's ByteBufferLogInputStream: a length below
// any format's minimum or an unknown magic is ErrCorrupt, a batch cut
// short is ErrTruncated, and a whole v0/v1 message, however short, is
// ErrUnsupportedMagic.
func frameLen(buf []byte) (int, error) {
	if len(buf) < lengthPrefix {
		return 0, fmt.Errorf("%d trailing bytes are shorter than a batch prefix: %w", len(buf), ErrCorrupt)
	}
	l := Batch(buf).BatchLength()
	if l < legacyMinLength {
		return 0, fmt.Errorf("batch length field %d below minimum %d: %w", l, legacyMinLength, ErrCorrupt)
	}
	if len(buf) > offMagic {
		if m := int8(buf[offMagic]); m < 0 || m > Magic {
			return 0, fmt.Errorf("unknown magic %d: %w", m, ErrCorrupt)
		}
	}
	size := int64(l) + lengthPrefix
	if size > int64(len(buf)) {
		return 0, fmt.Errorf("partial batch: length field says %d bytes, %d remain: %w: %w", size, len(buf), ErrTruncated, ErrCorrupt)
	}
	if m := buf[offMagic]; m != Magic {
		return 0, fmt.Errorf("magic %d message of %d bytes: %w", m, size, ErrUnsupportedMagic)
	}
	if l < minBatchLength {
		return 0, fmt.Errorf("batch length field %d below minimum %d: %w", l, minBatchLength, ErrCorrupt)
	}
	return int(size), nil
}

// Split frames the concatenated batches in buf by their length fields. The
// batches alias buf (capacity-limited, so appending to one cannot clobber
// the next). It checks framing only; call Validate on each batch. An empty
// buf yields no batches; a trailing partial batch is ErrTruncated (and
// ErrCorrupt), an impossible length ErrCorrupt, and a v0/v1 message
// ErrUnsupportedMagic.
func Split(buf []byte) ([]Batch, error) {
	count := 0
	for rest := buf; len(rest) > 0; count++ {
		size, err := frameLen(rest)
		if err != nil {
			return nil, fmt.Errorf("split at byte %d: %w", len(buf)-len(rest), err)
		}
		rest = rest[size:]
	}
	if count == 0 {
		return nil, nil
	}
	out := make([]Batch, 0, count)
	for rest := buf; len(rest) > 0; {
		size, _ := frameLen(rest)
		out = append(out, Batch(rest[:size:size]))
		rest = rest[size:]
	}
	return out, nil
}

// ValidPrefix measures the intact head of a log region after a crash: n is
// the length in bytes of the longest prefix of buf made of whole batches
// with magic 2 and a matching CRC, and batches is how many there are.
// Everything from n on should be truncated.
func ValidPrefix(buf []byte) (n int, batches int) {
	for len(buf)-n > 0 {
		rest := buf[n:]
		size, err := frameLen(rest)
		if err != nil {
			break
		}
		b := Batch(rest[:size])
		if checkFrame(b) != nil || b.CheckCRC() != nil {
			break
		}
		n += size
		batches++
	}
	return n, batches
}
