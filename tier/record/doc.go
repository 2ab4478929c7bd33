// Package record is a zero-copy view over raw Kafka v2 record batches
// ("RecordBatch", magic 2), the unit the broker receives in Produce requests,
// stores in segment files byte for byte and returns in Fetch responses.
//
// A [Batch] is just the batch's bytes. Accessors read header fields in place
// and never allocate; the setters write in place. [Validate] checks a batch
// as Kafka does on produce (magic, framing, CRC-32C, record count, size,
// the framing and count of its records, compressed or not, keys for
// compacted topics); [Split] frames the concatenated batches of a
// produce request or a log region; [ValidPrefix] finds the intact part of a
// torn log file during recovery. [Batch.Records] decompresses and parses the
// records, for the few callers that need them: the compaction cleaner,
// coordinators, tools. [Build] and [NewBatch] encode batches (compressing
// with franz-go's kgo compressors), for the cleaner, tests and tools.
// [Batch.EndTxnMarker] and [BuildEndTxnMarker] read and write the COMMIT
// and ABORT control batches of transactions (Kafka's EndTransactionMarker).
//
// Decompression uses the codec libraries kgo itself uses directly
// (klauspost/compress; for lz4, pierrec/lz4's block decoder under the
// package's own frame reader, which keeps its buffers), as streams, every
// codec bounded by an output limit ([InflateFactor] times the topic's
// max.message.bytes, at most [MaxDecompressedBytes]) and declared sizes checked before anything is
// allocated for them: kgo.DefaultDecompressor would let a few bytes of
// snappy or zstd from a client claim 2 GiB. Validate never holds a
// compressed batch's records whole: it reads them through a small buffer
// and checks each record's varint framing as the bytes arrive (the scanner
// in scan.go), as Kafka's LogValidator does with its streaming record
// iterator. Records, which returns them, holds them once, within the
// limit.
//
// Concurrency: a Batch has no state beyond its bytes. Reading accessors on
// one Batch from several goroutines is safe as long as nobody calls a setter
// at the same time; setters must be serialized by the caller (in the broker
// the owning partition log's lock does this). Decompression, by Validate or
// Records from any goroutine, takes one of a fixed set of slots (one per
// CPU at start-up, a buffered channel) and waits while all are taken, so
// that the process never runs more decompressions at once than it has
// CPUs, whatever the number of producers or cleaner threads. A slot owns
// its decoders and buffers, built at package initialisation (outside any
// testing/synctest bubble: the zstd decoder holds a channel); its holder
// uses them alone and returns the slot when done. Build's compressors
// (kgo's, pooled) are safe for concurrent use and take no slot.
//
// Byte layout of a batch (big-endian; offsets in bytes):
//
//	 0 baseOffset           int64
//	 8 batchLength          int32   bytes after this field (len(batch)-12)
//	12 partitionLeaderEpoch int32
//	16 magic                int8    always 2
//	17 crc                  uint32  CRC-32C (Castagnoli) of bytes 21..end
//	21 attributes           int16   bits 0-2 codec (0 none, 1 gzip, 2 snappy,
//	                                3 lz4, 4 zstd), bit 3 timestamp type
//	                                (1 = LogAppendTime), bit 4 transactional,
//	                                bit 5 control, bit 6 delete horizon set
//	23 lastOffsetDelta      int32
//	27 firstTimestamp       int64
//	35 maxTimestamp         int64
//	43 producerId           int64   -1 when not idempotent
//	51 producerEpoch        int16
//	53 baseSequence         int32
//	57 records count        int32
//	61 records              (compressed as a whole when codec != 0)
//
// Each record is encoded with zig-zag varints (as protobuf sint32/sint64):
//
//	length varint (bytes after this field), attributes int8 (unused),
//	timestampDelta varlong, offsetDelta varint,
//	keyLength varint (-1 = null), key, valueLength varint (-1 = null), value,
//	headerCount varint, then per header: keyLength varint, key (UTF-8),
//	valueLength varint (-1 = null), value.
//
// baseOffset and partitionLeaderEpoch lie outside the CRC, so the broker can
// assign them without rehashing the batch.
package record
