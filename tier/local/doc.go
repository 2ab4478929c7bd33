// Package local is the hot local log of one partition: a directory of
// segments (tier/segment) with one offset space, modelled on Kafka's
// LocalLog and the local half of UnifiedLog. It assigns offsets on the
// leader, keeps followers' offsets, rolls segments by size, age and offset
// range, reads whole batches as file regions, answers timestamp look-ups,
// truncates for replication, moves the log start for DeleteRecords and
// retention, and recovers after a crash. The idempotent-producer state
// (tier/producer) lives here, under the same lock as the appends it checks.
//
// Transactions: a transactional batch opens its producer's transaction
// in the producer state. The leader writes COMMIT and ABORT markers with
// AppendMarker (checked for producer and coordinator epoch first);
// followers' appends and the replay of recovery and truncation read the
// marker record of each control batch and apply it the same way. A marker
// that aborts a non-empty transaction adds its entry to the transaction
// index (.txnindex) of the segment holding it; the segment owns that file
// (tier/segment), so rolls, retention, truncation and the cleaner's swap
// keep it with its segment. ReplaceSegments copies the replaced
// segments' entries into the cleaned one; the compaction cleaner, which
// removes aborted records, writes the cleaned segment's index itself
// (the entries whose records it kept) and swaps with
// ReplaceSegmentsIndexed, which copies none. The log answers LastStableOffset, FirstUnstableOffset and
// CollectAbortedTxns for read_committed fetches; the partition reports its
// high watermark with OnHighWatermarkUpdated.
//
// Directory layout (one directory per partition):
//
//	<base:020>.log .index .timeindex   segments (see tier/segment)
//	<base:020>.txnindex                the segment's aborted transactions,
//	                                   once it holds one
//	<offset:020>.snapshot              producer state after every batch below
//	                                   offset: taken at each roll (offset = new
//	                                   segment's base) and at Close; the 2
//	                                   newest are kept
//	partition.checkpoint               text: log start offset and recovery
//	                                   point, rewritten atomically
//	clean-shutdown                     empty marker written last by Close
//	leader-epoch-checkpoint            Kafka's text layout: epoch and first
//	                                   offset of each leader epoch (epochs.go)
//	cleaner.checkpoint                 text: the log cleaner's first dirty
//	                                   offset and pending delete horizon
//	<base:020>.log.cleaned (+indexes)  a cleaned segment being written
//	<base:020>.log.swap (+indexes)     a cleaned segment committed to replace
//	                                   the segments in its offset range
//	<base:020>.swap-end                text: where that range ends
//
// Cleaning (ReplaceSegments, for the compaction cleaner): the cleaner
// reads sealed segments (ReadSegment), writes a .cleaned segment without
// the lock (CreateCleaned) and swaps it in under the lock: record the
// end of the replaced range (.swap-end), rename to .swap (the commit
// point, .log last), delete the replaced segments, rename to the plain
// names. Open first removes .cleaned files, and index .swap and
// .swap-end files without a .log.swap (rolling back), and completes every
// .log.swap (rolling forward: the segments with a base inside the
// recorded range are deleted, then the .swap files renamed), so a crash
// leaves either the old or the new segment set. A cleaned segment keeps
// the first replaced segment's base as its name but may end earlier than
// the replaced ones did, or hold no batch at all (the cleaner drops
// emptied batches, as Kafka's does), so segments may end below the next
// one's base and be empty; Read moves on to the next segment.
//
// Open files: with a segment.FileCache (Config.Files, one per broker) a
// log holds only its active segment's .log file open, and the sealed
// segments still waiting for the roll flusher's sync; the cache holds the
// other sealed segments' files while they are read. Open seals each
// segment as it loads it, so that loading a log of many segments never
// holds all their files.
//
// Durability: by default nothing is fdatasynced on append (Kafka's
// defaults; the page cache and replication carry durability).
// FlushIntervalMessages / FlushIntervalMs make appends flush synchronously.
// A roll hands the sealed segment to a background flusher goroutine, which
// syncs it without the lock and then advances the recovery point to the
// new segment's base. Every flush rewrites the checkpoint, after fsyncing
// the leader-epoch checkpoint (an append that starts a new epoch rewrites
// that file without fsync, as Kafka does since KAFKA-15046).
//
// Recovery (Open): with the clean-shutdown marker the segments are loaded
// without scanning (index files are still checked and rebuilt when
// damaged) and the marker is removed. Without it, every segment that may
// hold offsets at or after the checkpointed recovery point is scanned with
// segment.Recover, which truncates a torn or corrupt tail; if that happens
// before the last segment the later segments are deleted. A half-written
// batch is therefore never served. The scanned segments' transaction
// indexes are emptied. The producer state is then loaded from the newest
// snapshot at or below both the recovery point and the first scanned
// segment, and brought up to the log end by replaying the batch headers
// after it (and the markers), which rebuilds those indexes (entries an
// index already holds are skipped), and the leader epochs of
// the batches after the recovery point are added again. The wall clock of the active
// segment's first append (for SegmentMs) is not persisted; it restarts at
// Open.
//
// Concurrency: Log.mu (a sync.RWMutex) guards the segment list, the
// producer state, the recovery point and the roll/flush bookkeeping.
// Appends, rolls, truncations, DeleteRecordsBefore, Flush, SetConfig,
// AppendMarker, Close and Delete hold it
// exclusively; LastStableOffset, FirstUnstableOffset,
// CollectAbortedTxns (a TxnIndex has its own lock too), Read, OnOlderSegment,
// OffsetForTimestamp, MaxTimestamp and Segments share it, and Read holds
// it only to find the segment and compute the Slice: the caller writes the
// Slice out and releases it without any lock (the file stays open until Release, even if
// the segment is deleted meanwhile). LogEndOffset and LogStartOffset are
// atomics, readable without the lock. Lock order: Log.mu before a
// Segment's own lock. The Log owns one goroutine, the roll flusher, started
// by Open and stopped by Close and Delete; it holds Log.mu only to pick the
// segments and to advance the recovery point, never during an fdatasync.
// After a failed write, sync or truncation the log is failed: appends and
// truncations return the same error until it is reopened. Both wrap
// ErrStorage (Kafka's KAFKA_STORAGE_ERROR).
//
// Full disk: an append that fails for lack of space (ENOSPC, EDQUOT) is
// undone (the segment cuts the partial batch off, a roll creates the new
// segment before sealing the old one and removes it again on failure, the
// batch's leader epoch is recorded before the batch) and fails with
// ErrStorage and segment.ErrNoSpace without failing the log: reads go
// on, later appends fail the same way while the disk is full and succeed
// once space is freed, at the same offset. Kafka instead takes the whole
// log directory offline; keeping the partition readable is friendlier and
// safe, since nothing of the failed append remains. Config.SpaceCheck,
// asked before every append, refuses appends the same way before the disk
// is full (the broker keeps the embedded etcd's reserve with it).
package local
