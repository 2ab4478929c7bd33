// Package compaction keeps partition logs within their cleanup policies:
// retention (cleanup.policy=delete: drop whole old segments) and cleaning
// (cleanup.policy=compact: keep the latest record per key); topics with
// "compact,delete" get both. It sits between the broker, which starts a
// Service and lists its partitions through a Source, and the hot logs
// (tier/local) it trims and rewrites. It does not import the broker: a
// Partition is anything with Config() and Log().
//
// # Retention
//
// Every log.retention.check.interval.ms, Retention.RunOnce looks at each
// partition's current topic configuration (so AlterConfigs changes apply
// at the next pass) and deletes the oldest sealed segments past
// retention.ms (by the segment's largest record timestamp, as Kafka does)
// or beyond retention.bytes (per partition, active segment counted); -1
// disables a rule, and neither the active segment nor one reaching past
// the high watermark is ever deleted. Deletion moves
// the log start offset to the first kept segment with
// local.Log.DeleteRecordsBefore, so ListOffsets(earliest) and Fetch's
// OFFSET_OUT_OF_RANGE follow it. Tiered topics are left to the tier.
//
// # Cleaning
//
// The Cleaner follows Kafka's LogCleaner. Per log, offsets below the
// cleaner checkpoint (local.CleanerPoint) are clean; the dirty range runs
// from there to the first uncleanable offset: the active segment's base,
// the high watermark (when the partition reports one), the first unstable
// offset (see Transactions), or the first segment holding a record
// younger than min.compaction.lag.ms. A log is cleanable when its dirty share of bytes
// exceeds min.cleanable.dirty.ratio, when its first dirty record is older
// than max.compaction.lag.ms (such logs go first), or when a kept
// tombstone's delete horizon has passed; the dirtiest goes next.
//
// A pass (1) maps the 96-bit hash of every key in the dirty range to its
// latest offset (offsetMap: 16-byte slots in a table that grows with the
// keys up to the thread's share of log.cleaner.dedupe.buffer.size; when it
// is full, the pass covers only the dirty prefix that fit), then (2) rewrites every sealed segment from the
// log's start to the end of the mapped range, in groups of consecutive
// segments whose sizes add up to at most segment.bytes, each group into
// one new segment, and (3) checkpoints the end of the mapped range.
// Rewriting keeps a record unless a later offset of its key is in the map,
// its key is null, it belongs to an aborted transaction, or it is a
// tombstone whose delete horizon has passed.
// Offsets are never renumbered: a rewritten batch keeps its base and last
// offset, producer fields, leader epoch, codec (it is recompressed with
// the same one) and timestamp type; its records keep their timestamps.
// Unchanged batches are copied byte for byte, and a group of one segment
// that comes out unchanged is not swapped at all. A batch emptied of
// records is dropped, as in Kafka, unless it is the newest batch of an
// active idempotent producer (kept empty so its sequence survives). A
// cleaned segment keeps the first replaced segment's base as its name
// even when its first batch starts later, and may end before the replaced
// segments did or hold no batch at all: ReplaceSegments records the
// replaced range for crash recovery, and reads step over such gaps to the
// next batch. Empty segments join the next pass's groups and are merged
// away.
//
// Tombstones (null values) follow KIP-534: the first pass that keeps a
// tombstone stamps its batch with a delete horizon (now +
// delete.retention.ms, stored in FirstTimestamp with attribute bit 6);
// a later pass after the horizon drops it. A consumer that starts reading
// from the beginning therefore has at least delete.retention.ms to see a
// delete before it disappears. The earliest pending horizon is kept in the
// cleaner checkpoint so that a log with nothing dirty is still cleaned
// when it passes.
//
// New segments are swapped in with local.Log.ReplaceSegments, crash-safely
// (.cleaned → .swap → final names; local.Open completes or rolls back an
// interrupted swap). The log's lock is held only for the swap, so produce
// and fetch go on during a pass; a fetch that read part of a segment
// before the swap reads the rest from the new one, which holds every
// latest value at or after any offset. If retention, DeleteRecords or a
// truncation changes the segments meanwhile, the swap is refused
// (local.ErrSegmentsChanged) and the pass is simply retried later.
//
// # Transactions
//
// As in Kafka, the dirty range never reaches past the first unstable
// offset (the log's last stable offset): every transaction below it is
// complete, and the transaction indexes (local.Log.CollectAbortedTxns)
// name the aborted ones. A pass follows the transactions of the batches
// it reads (txnTracker, Kafka's CleanedTransactionMetadata): records of
// an aborted transaction never enter the offset map and are removed (the
// batch goes, or stays empty when it is an active producer's newest);
// records of a committed one are cleaned like any other. A marker stays
// while any batch of its transaction is still in the log, keeping its
// transaction index entry when it aborted; once they are all gone, the
// marker gets a delete horizon (now + delete.retention.ms, as a
// tombstone) and its index entry goes, and the first pass after the
// horizon removes it, unless it is the newest marker of an active
// producer's current epoch, which stays for fencing. The
// cleaned segment's transaction index holds just the entries kept
// (local.Log.ReplaceSegmentsIndexed).
//
// # Concurrency
//
// Service owns its goroutines: one retention loop and log.cleaner.threads
// cleaner loops, stopped by cancelling Run's context (Run returns after
// they exit; a pass stops at its next batch). Run's own goroutine follows
// the broker's configuration (config.Live): when the cleaner's dynamic
// settings change it stops the cleaner loops the same way, then starts
// those of a new Cleaner built with the new settings (Service.mu guards
// which Cleaner is current). Each cleaner thread owns an
// offset map and read buffer (a thread state from Cleaner.threads);
// Cleaner.mu guards the set of logs being cleaned, so two threads never
// clean one log. Retention may run alongside a pass on the same log;
// local.Log's lock orders them. The I/O throttler is shared and has its
// own lock. A cleaner thread decompressing a batch holds one of
// tier/record's process-wide decompression slots, which produce
// validation shares, and fails the pass past what the topic's
// max.message.bytes lets a batch decompress to (as Kafka's cleaner
// refuses a batch over it). Decisions, backoffs, tickers and the
// throttle all read the time package's clock, so tests run them in
// testing/synctest bubbles.
package compaction
