package record

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Record is one record of a batch. Key and Value alias the batch (or its
// decompressed records area); nil means null, a non-nil empty slice means
// empty.
type Record struct {
	OffsetDelta    int32
	TimestampDelta int64
	Key, Value     []byte
	Headers        []Header
}

// Header is one record header. Kafka header keys are non-null strings;
// a nil Value is null.
type Header struct {
	Key   string
	Value []byte
}

// minRecordSize is the smallest encoded record: a one-byte varint for each
// of length, timestampDelta, offsetDelta, keyLength, valueLength and
// headerCount, plus the attributes byte.
const minRecordSize = 7

// Records decompresses the batch if needed and parses its records. The
// batch's framing is checked but not its CRC (see Validate). Malformed
// records are ErrCorrupt; records decompressing beyond MaxDecompressedBytes
// are ErrTooLarge.
func (b Batch) Records() ([]Record, error) { return b.RecordsWithin(0) }

// RecordsWithin is Records for a batch of a topic whose max.message.bytes
// is maxBatchBytes (0: none): decompression stops, with ErrTooLarge, past
// what Validate accepts. Like Validate, it waits for a decompression slot.
func (b Batch) RecordsWithin(maxBatchBytes int) ([]Record, error) {
	if err := checkFrame(b); err != nil {
		return nil, err
	}
	data := []byte(b[HeaderSize:])
	if c := b.Codec(); c != None {
		var err error
		if data, err = decompress(c, data, recordsLimit(maxBatchBytes)); err != nil {
			return nil, err
		}
	}
	n := b.NumRecords()
	if err := checkCount(data, n); err != nil {
		return nil, err
	}
	recs := make([]Record, n)
	if err := parseRecords(data, recs); err != nil {
		return nil, err
	}
	return recs, nil
}

// checkCount rejects record counts the data cannot possibly hold, before
// anything is sized by them.
func checkCount(data []byte, n int32) error {
	if n < 0 || int64(n) > int64(len(data)/minRecordSize) {
		return fmt.Errorf("record count %d impossible in %d bytes: %w", n, len(data), ErrCorrupt)
	}
	return nil
}

// parseRecords decodes data, which must hold exactly len(out) well-formed
// records, into out.
func parseRecords(data []byte, out []Record) error {
	for i := range out {
		used, err := parseRecord(data, &out[i])
		if err != nil {
			return fmt.Errorf("record %d of %d: %w", i, len(out), err)
		}
		data = data[used:]
	}
	if len(data) != 0 {
		return fmt.Errorf("%d bytes after the last of %d records: %w", len(data), len(out), ErrCorrupt)
	}
	return nil
}

// reader decodes the fields of one record body, remembering the first
// error so that callers check once per record.
type reader struct {
	src []byte
	bad bool
}

func (r *reader) varlong() int64 {
	v, n := binary.Varint(r.src)
	if n <= 0 {
		r.bad = true
		r.src = nil
		return 0
	}
	r.src = r.src[n:]
	return v
}

func (r *reader) varint() int32 {
	v := r.varlong()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.bad = true
		r.src = nil
		return 0
	}
	return int32(v)
}

func (r *reader) byte() byte {
	if len(r.src) == 0 {
		r.bad = true
		return 0
	}
	c := r.src[0]
	r.src = r.src[1:]
	return c
}

// bytes reads a varint-length-prefixed byte string; -1 is null (nil) when
// nullable. The result's capacity is its length, so appending copies.
func (r *reader) bytes(nullable bool) []byte {
	l := r.varint()
	switch {
	case r.bad:
		return nil
	case l == -1 && nullable:
		return nil
	case l < 0 || int(l) > len(r.src):
		r.bad = true
		r.src = nil
		return nil
	}
	v := r.src[:l:l]
	r.src = r.src[l:]
	return v
}

// parseRecord decodes the record at the start of src into rec and returns
// its encoded size.
func parseRecord(src []byte, rec *Record) (int, error) {
	length, n := binary.Varint(src)
	if n <= 0 || length < 0 || length > int64(len(src)-n) {
		return 0, fmt.Errorf("bad record length: %w", ErrCorrupt)
	}
	size := n + int(length)
	r := reader{src: src[n:size]}
	r.byte() // attributes: unused in v2
	rec.TimestampDelta = r.varlong()
	rec.OffsetDelta = r.varint()
	rec.Key = r.bytes(true)
	rec.Value = r.bytes(true)
	count := r.varint()
	if r.bad || count < 0 || int64(count) > int64(len(r.src)/2) {
		return 0, fmt.Errorf("malformed record fields: %w", ErrCorrupt)
	}
	rec.Headers = nil
	if count > 0 {
		rec.Headers = make([]Header, count)
	}
	for i := int32(0); i < count; i++ {
		key := r.bytes(false)
		value := r.bytes(true)
		if r.bad {
			return 0, fmt.Errorf("malformed header %d: %w", i, ErrCorrupt)
		}
		rec.Headers[i] = Header{Key: string(key), Value: value}
	}
	if len(r.src) != 0 {
		return 0, fmt.Errorf("%d bytes left inside record: %w", len(r.src), ErrCorrupt)
	}
	return size, nil
}
