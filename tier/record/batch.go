package record

import (
	"encoding/binary"
	"hash/crc32"
	"math"
)

// Batch is one whole v2 record batch, including the 12-byte baseOffset and
// batchLength prefix. It aliases the buffer it was sliced from.
//
// Accessors assume the header is present (len(b) >= HeaderSize, which
// [Validate], [Split] and [ValidPrefix] establish); on a shorter slice they
// return zero values and setters do nothing, so they never panic.
type Batch []byte

// HeaderSize is the size of the fixed batch header, up to the first record.
const HeaderSize = 61

// Byte offsets of the header fields.
const (
	offBaseOffset      = 0
	offBatchLength     = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offNumRecords      = 57

	// lengthPrefix is the part of the batch not counted by batchLength.
	lengthPrefix = offBatchLength + 4
	// minBatchLength is the smallest legal batchLength (an empty batch).
	minBatchLength = HeaderSize - lengthPrefix
)

// Attribute bits.
const (
	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
)

// Magic is the only batch format version this package understands.
const Magic = 2

// Codec is a batch compression codec, stored in attribute bits 0-2.
type Codec int8

// The codecs Kafka defines. Values 5-7 are invalid.
const (
	None   Codec = 0
	Gzip   Codec = 1
	Snappy Codec = 2
	LZ4    Codec = 3
	Zstd   Codec = 4
)

// String returns the codec's Kafka configuration name.
func (c Codec) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return "unknown"
}

// castagnoli is the CRC-32C table; MakeTable selects the hardware path.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (b Batch) i16(off int) int16 {
	if len(b) < off+2 {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b[off:]))
}

func (b Batch) u32(off int) uint32 {
	if len(b) < off+4 {
		return 0
	}
	return binary.BigEndian.Uint32(b[off:])
}

func (b Batch) i64(off int) int64 {
	if len(b) < off+8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b[off:]))
}

// BaseOffset is the offset of the batch's first record. Not covered by the CRC.
func (b Batch) BaseOffset() int64 { return b.i64(offBaseOffset) }

// SetBaseOffset assigns the batch's offsets; the CRC stays valid.
func (b Batch) SetBaseOffset(off int64) {
	if len(b) >= offBaseOffset+8 {
		binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off))
	}
}

// BatchLength is the stored length field: the batch size minus 12.
func (b Batch) BatchLength() int32 { return int32(b.u32(offBatchLength)) }

// PartitionLeaderEpoch is the leader epoch that appended the batch. Not
// covered by the CRC.
func (b Batch) PartitionLeaderEpoch() int32 { return int32(b.u32(offLeaderEpoch)) }

// SetPartitionLeaderEpoch stamps the leader epoch; the CRC stays valid.
func (b Batch) SetPartitionLeaderEpoch(epoch int32) {
	if len(b) >= offLeaderEpoch+4 {
		binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(epoch))
	}
}

// Magic is the format version byte; 2 for every batch this package accepts.
func (b Batch) Magic() int8 {
	if len(b) <= offMagic {
		return 0
	}
	return int8(b[offMagic])
}

// CRC is the stored CRC-32C of the bytes from the attributes to the end.
func (b Batch) CRC() uint32 { return b.u32(offCRC) }

// computeCRC hashes the CRC-covered part of the batch.
func (b Batch) computeCRC() uint32 {
	if len(b) < offAttributes {
		return 0
	}
	return crc32.Checksum(b[offAttributes:], castagnoli)
}

// updateCRC stores a freshly computed CRC.
func (b Batch) updateCRC() {
	if len(b) >= offAttributes {
		binary.BigEndian.PutUint32(b[offCRC:], b.computeCRC())
	}
}

// Attributes is the raw attributes field.
func (b Batch) Attributes() int16 { return b.i16(offAttributes) }

// Codec is the compression codec of the records area.
func (b Batch) Codec() Codec { return Codec(b.Attributes() & attrCodecMask) }

// LogAppendTime reports whether record timestamps are the broker's append
// time (MaxTimestamp) rather than the producer's create time.
func (b Batch) LogAppendTime() bool { return b.Attributes()&attrLogAppendTime != 0 }

// IsTransactional reports whether the batch belongs to a transaction.
func (b Batch) IsTransactional() bool { return b.Attributes()&attrTransactional != 0 }

// IsControl reports whether the batch holds a control record (a
// transaction commit or abort marker) rather than user data.
func (b Batch) IsControl() bool { return b.Attributes()&attrControl != 0 }

// HasDeleteHorizon reports whether the cleaner stored a tombstone delete
// horizon in FirstTimestamp (KIP-534).
func (b Batch) HasDeleteHorizon() bool { return b.Attributes()&attrDeleteHorizon != 0 }

// LastOffsetDelta is the offset of the last record relative to BaseOffset.
// It survives compaction, so it may exceed NumRecords-1 in a cleaned log.
func (b Batch) LastOffsetDelta() int32 { return int32(b.u32(offLastOffsetDelta)) }

// LastOffset is the offset of the batch's last record.
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }

// FirstTimestamp is the timestamp record TimestampDeltas are relative to.
func (b Batch) FirstTimestamp() int64 { return b.i64(offFirstTimestamp) }

// MaxTimestamp is the largest record timestamp, or the append time when
// LogAppendTime is set.
func (b Batch) MaxTimestamp() int64 { return b.i64(offMaxTimestamp) }

// ProducerID is the idempotent producer's id, or -1.
func (b Batch) ProducerID() int64 { return b.i64(offProducerID) }

// ProducerEpoch is the idempotent producer's epoch, or -1.
func (b Batch) ProducerEpoch() int16 { return b.i16(offProducerEpoch) }

// BaseSequence is the sequence number of the first record, or -1.
func (b Batch) BaseSequence() int32 { return int32(b.u32(offBaseSequence)) }

// LastSequence is the sequence number of the last record. Sequences wrap
// from MaxInt32 to 0, as in Kafka; -1 stays -1 (no sequence).
func (b Batch) LastSequence() int32 {
	base := b.BaseSequence()
	if base == -1 {
		return -1
	}
	delta := b.LastOffsetDelta()
	if delta > 0 && base > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - base) - 1
	}
	return base + delta
}

// NumRecords is the stored record count.
func (b Batch) NumRecords() int32 { return int32(b.u32(offNumRecords)) }

// SetLogAppendTime marks the batch as using LogAppendTime, sets both
// FirstTimestamp and MaxTimestamp to ts (the broker's append time in ms)
// and recomputes the CRC. A delete horizon stored in FirstTimestamp is kept.
func (b Batch) SetLogAppendTime(ts int64) {
	if len(b) < HeaderSize {
		return
	}
	attrs := uint16(b.Attributes()) | attrLogAppendTime
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	if attrs&attrDeleteHorizon == 0 {
		binary.BigEndian.PutUint64(b[offFirstTimestamp:], uint64(ts))
	}
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	b.updateCRC()
}

// Offset is the absolute offset of a record parsed from this batch.
func (b Batch) Offset(r Record) int64 { return b.BaseOffset() + int64(r.OffsetDelta) }

// Timestamp is the timestamp of a record parsed from this batch: the append
// time for LogAppendTime batches, else FirstTimestamp + TimestampDelta.
func (b Batch) Timestamp(r Record) int64 {
	if b.LogAppendTime() {
		return b.MaxTimestamp()
	}
	return b.FirstTimestamp() + r.TimestampDelta
}
