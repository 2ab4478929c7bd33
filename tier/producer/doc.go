// Package producer keeps the idempotent-producer state of one partition, so
// that the log can reject out-of-order or fenced batches and answer a
// retried batch with the offsets it was first written at, as Kafka's
// ProducerStateManager does.
//
// For every producer id the state holds the current epoch and the metadata
// of its last [MaxCachedBatches] batches (first/last sequence, first/last
// offset, max timestamp). [State.Check] classifies an incoming batch:
//
//   - same epoch and a (FirstSeq, LastSeq) equal to a cached batch: a
//     duplicate; the cached metadata is returned and nothing is appended;
//   - epoch lower than the current one: [ErrInvalidProducerEpoch];
//   - higher epoch: the batch must start at sequence 0;
//   - same epoch: FirstSeq must follow the last sequence (MaxInt32 wraps
//     to 0), else [ErrOutOfOrderSequence];
//   - unknown producer id: accepted whatever its first sequence. The
//     producer may have expired from the state (see [State.ExpireBefore]),
//     or its batches may lie below the log start; Kafka 2.5+ (KIP-360)
//     accepts such producers the same way instead of answering
//     UNKNOWN_PRODUCER_ID.
//
// Batches without a producer (ProducerID -1) are never checked; the log
// skips them before calling this package.
//
// A multi-batch append is checked through a [Pending] overlay, so that
// batches of one producer inside the append are checked against each other
// before anything is written; the log then updates the State batch by
// batch as it writes them. Markers are not staged: the coordinator's
// markers are appended on their own, checked with [State.CheckMarker].
//
// Transactions: the first transactional batch of a producer opens its
// transaction at that batch's first offset; a COMMIT or ABORT marker
// (control batch) from the producer closes it ([State.ApplyMarker]). While
// it is open, a non-transactional batch from the producer is rejected
// ([ErrInvalidTxnState]); a marker from an older producer epoch or an
// older coordinator epoch than the producer's last marker is rejected by
// [State.CheckMarker]. A marker for a producer without an open
// transaction changes neither the LSO nor the transaction index.
//
// Last stable offset: the first unstable offset is the first offset of the
// oldest transaction that is open, or completed with its marker not yet
// below the high watermark; the LSO is min(first unstable offset, high
// watermark) ([State.LastStableOffset]), as in Kafka. When a marker aborts
// a transaction the log appends [CompletedTxn.AbortedTxn] to the segment's
// transaction index (segment.TxnIndex); its LastStableOffset is computed
// as Kafka does: the first offset of the oldest transaction of another
// producer still open, else the marker's offset + 1.
//
// Snapshots: the log writes the state to "<offset:020>.snapshot" when a
// segment rolls and on Close; a snapshot at offset N reflects every batch
// below N. Byte layout (big-endian):
//
//	0  version    uint16   2 (1 is still read)
//	2  crc        uint32   CRC-32C (Castagnoli) of every byte after this field
//	6  producers  uint32   number of producer entries, sorted by producer id
//	then per producer:
//	   producerId int64 | epoch int16 | coordinatorEpoch int32 (-1: none) |
//	   txnFirstOffset int64 (-1: no open transaction) | lastTimestamp int64 |
//	   batches uint8 (0..5)
//	   then per batch, oldest first:
//	   firstSeq int32 | lastSeq int32 | firstOffset int64 | lastOffset int64 | maxTimestamp int64
//
// Version 1 lacks the coordinator epoch, transaction first offset and last
// timestamp (read as none, none and the last batch's max timestamp) and
// has 1..5 batches. A snapshot keeps the open transactions, so the LSO is
// right after a restart; completed transactions whose marker was above the
// high watermark are not kept, as in Kafka. Batches can be 0 after a marker
// moved the producer to a new epoch.
//
// Snapshots are written to a temporary file, synced and renamed into place.
//
// Concurrency: a State is not safe for concurrent use. It belongs to one
// partition log (tier/local.Log), whose mutex serializes every call.
package producer
