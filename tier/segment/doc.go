// Package segment stores one segment of a partition log: a contiguous run
// of offsets in a .log file of raw v2 record batches plus two sparse
// indexes, in Kafka's on-disk layout. The partition log (tier/local) keeps
// a list of segments, appends to the last one and rolls to a new one; the
// remote uploader ships sealed segments' files as they are.
//
// Files, named by the base offset as 20 zero-padded digits:
//
//	<base>.log        batches exactly as appended (offsets already assigned)
//	<base>.index      offset index: entries of 8 bytes, big-endian
//	                  relativeOffset uint32 | position uint32
//	<base>.timeindex  time index: entries of 12 bytes, big-endian
//	                  timestamp int64 | relativeOffset uint32
//	<base>.txnindex   transaction index ([TxnIndex]): entries of 34 bytes,
//	                  big-endian, one per transaction aborted by a marker
//	                  in the segment: version int16 (0) | producerId int64 |
//	                  firstOffset int64 | lastOffset int64 |
//	                  lastStableOffset int64
//
// A Segment owns its transaction index as it owns the other two: Create
// removes a stale one, Open loads it (cutting a torn tail and the entries
// past the log end), TruncateTo, Delete and RenameSuffix treat it with
// the other files, and Flush syncs it; the partition log decides what
// goes in (AppendAbortedTxn) and rebuilds it when it recovers the log.
//
// A segment being built by the log cleaner carries an extra suffix on all
// its names (Options.FileSuffix: ".cleaned", then ".swap"); RenameSuffix
// renames the open files, indexes first and .log last, and ReadAll hands
// the cleaner the whole .log as one Slice.
//
// Relative offsets are offset-base. As in Kafka, an offset index entry is
// added for a batch when more than IndexIntervalBytes of log were appended
// since the previous entry; it maps the batch's LAST offset to the batch's
// position (the first batch of a segment is implicitly at position 0). A
// time index entry (max timestamp so far, last offset of the batch that
// first reached it) is added at the same points when the max timestamp has
// grown since the last entry, and once more when the segment is sealed or
// closed. Entries strictly increase, so look-ups are binary searches over
// the entries, which are kept in memory; the files are written lazily (on
// Flush, Seal and Close), each opened only for the write, truncation or
// sync at hand, and are rebuilt from the log when they are missing, torn
// (size not a multiple of the entry size), not increasing or pointing past
// the end of the log.
//
// Open files: a segment holds its .log file open while it is pinned —
// active (not sealed), or sealed with writes not yet flushed — and hands
// it to the [FileCache] (Options.Files; the broker shares one) once it is
// sealed and flushed. The cache keeps a bounded number of such files
// open, least recently read first out, and reopens one (read-only) when a
// read needs it; a truncation that reaches into a sealed segment takes the
// file back (reopening it for writing). So a partition costs one
// descriptor for its active segment, and its sealed segments share the
// cache's bound. Without a FileCache every .log file stays open as long as
// its segment.
//
// Reads: Read finds the nearest offset index entry at or below the target,
// then walks batch headers forward (one buffered read covers many small
// batches) to the batch holding the target, and returns a [Slice] — a file
// region, ready for sendfile — of whole batches: at least one, more while
// they fit maxBytes, never past the caller's maxPosition (the log passes
// the position of its high watermark). Timestamp look-ups start from the
// time index the same way.
//
// Page cache (Options.CacheWindow, log.page.cache.window.bytes, off by
// default as in Kafka): as a segment grows, the bytes more than the window
// behind its end are handed to writeback (sync_file_range) and, two 8 MiB
// steps later, dropped from the cache (fadvise DONTNEED), so later appends
// reuse those pages. On a VM whose free memory is handed back to the host,
// a fresh page costs many times a reused one, so the window makes an
// append-heavy broker cheaper (doc/perf.md); readers behind the window read
// from disk. The log sets the window per append ([Segment.SetCacheWindow]):
// a follower's appends use replica.page.cache.window.bytes, on by
// default, since only a reader at the tail is likely to read a follower's
// pages.
//
// Recovery: [Segment.Recover] scans the whole .log, keeps the longest
// prefix of intact batches (record.ValidPrefix: framing, magic, CRC;
// plus increasing offsets), truncates the rest and rebuilds the indexes.
// [Open] runs it by itself when the indexes are unusable. A transaction
// index is recovered on its own ([OpenTxnIndex]): it keeps the longest
// prefix of whole, valid entries and cuts the rest, so a torn trailing
// entry is dropped; what was cut is rebuilt from the segment's markers.
//
// Concurrency: a Segment is safe for concurrent use. Its RWMutex guards the
// in-memory state (size, next offset, index entries, flags); Append,
// TruncateTo, Recover, Seal and Close take it exclusively, reads share it.
// The owning log's lock, when held, is always taken first, and a
// FileCache's lock last (the cache never calls into a segment). A write
// never becomes visible before it completes: size advances only after the
// whole batch was written, and reads never look past size. The .log file
// is reference-counted: its holder (the segment while pinned, else the
// FileCache) holds one reference and every outstanding Slice and read in
// progress another, so Close, Delete and the cache's eviction defer
// closing the descriptor until the last Slice is released (deleted files
// stay readable through it).
// After a failed write the segment is failed: every later append returns
// the same error. Except when the write failed for lack of space and its
// partial bytes were cut off again (ErrNoSpace): the segment is then as
// it was, and later appends try again.
package segment
