// Package remote is the cold tier of a partition log: the remote log
// manager copies sealed segments below the last stable offset (so no
// copy holds a record of an open transaction, as in Kafka) to an object
// store and expires them, and the reader serves cold offsets from the bucket through an
// on-disk chunk cache.
//
// # Object keys
//
// Every copy of a segment gets a fresh copy id, so a deposed leader's late
// upload can never overwrite a valid copy:
//
//	<topic>-<topicID hex>/<partition>/<base:020>-<copyID>.log        the segment's batches
//	<topic>-<topicID hex>/<partition>/<base:020>-<copyID>.index      offset index (segment layout)
//	<topic>-<topicID hex>/<partition>/<base:020>-<copyID>.timeindex  time index (segment layout)
//	<topic>-<topicID hex>/<partition>/<base:020>-<copyID>.epochs     "<epoch> <start offset>\n" lines
//	<topic>-<topicID hex>/<partition>/<base:020>-<copyID>.producers  producer snapshot (may be empty)
//	<topic>-<topicID hex>/<partition>/<base:020>-<copyID>.txnindex   transaction index (segment layout; only with aborted transactions)
//	<topic>-<topicID hex>/<partition>/manifest.json                  finished segments (disaster recovery)
//
// The object store's own prefix (remote.log.storage.s3.prefix) comes
// before these keys. The manifest also carries the topic's partition count
// and config overrides, so that FindTopic (restore.go) can recreate the
// topic from the bucket alone (`strata tier restore`).
//
// # Metadata
//
// One Segment record (JSON) per copy lives in the metadata store's
// metadata.RemoteSegments (etcd in the broker, memstore in tests), keyed
// by "<base:020>-<copyID>" and written with leader-epoch fencing. A copy moves through
// COPY_STARTED → COPY_FINISHED → DELETE_STARTED → DELETE_FINISHED; only
// finished copies are read or allow deleting the local segment. Records in
// DELETE_FINISHED are pruned except the finished copy with the highest end
// offset, which remembers how far the partition was ever copied; an
// interrupted copy (never finished) is deleted and pruned.
//
// A leader claims the partition's records once per leader epoch before
// its first copy or clean-up (ClaimRemoteSegments: raise the
// fence, read the records, in one step). A view read earlier, as a
// follower, can miss a copy the deposed leader finished after it; after
// the claim no older epoch can write, so nothing is copied twice.
//
// # Reads
//
// The broker routes a read with one visible offset check,
// broker/partition.(*Partition).Locate: an offset below the local log
// start of a tiered partition is cold, anything else hot (no I/O). For a
// cold offset, Reader.Locate finds the finished copy holding it in the
// partition's cached metadata view. Predicates and look-ups on the view
// (LogStartOffset, HighestOffset, MayDeleteLocal) never do I/O, and
// neither does Locate for a copy the view holds (copies are immutable).
// The metadata store is listed only by an explicit Refresh, by the
// manager's passes (which keep every view fresh), and by Locate when the
// view was never loaded, or is older than the task interval and holds no
// copy of the offset: under the caller's context, capped at 5 s. A failed
// reload is ErrMetadataUnavailable (retriable; the broker answers
// REPLICA_NOT_AVAILABLE, as Kafka does while a partition's remote metadata
// is not ready); an offset no finished copy holds is ErrNotTiered
// (OFFSET_OUT_OF_RANGE). ReadSegment then finds the position with the
// copy's offset index (kept in memory; a read at the copy's base offset
// starts at position 0 and needs none), fetches the .log object in
// ChunkSize ranged GETs into the chunk cache and returns whole batches as
// a region of a cached chunk. The cache has two tiers:
// every fill lands in memory (remote.log.reader.memory.bytes, LRU, buffers
// reused), whose regions go out with write(2); a chunk filled again after
// it left memory also goes to disk (remote.log.reader.cache.bytes, LRU),
// whose regions go out with sendfile. A consumer streaming through the
// tier reads each chunk once and so writes no page cache, which on a cold
// read is a large share of the broker's CPU. A chunk a reader moved past
// is recycled first (drop-behind), so a stream cycles through a few warm
// buffers: on VMs that hand free memory back to the host, fresh memory
// costs as much as fresh page cache (doc/perf.md has the measurements
// behind both choices). A first batch that spans two chunks is copied to a
// span entry holding just that batch. The next four chunks (at most an eighth of the
// memory tier) are read ahead in the background while reader slots are
// free, each run of missing chunks of a copy with one ranged GET; past the
// end of a copy the read-ahead goes on into the following copies, so a
// sequential reader does not stall at segment boundaries. Chunks are 8 MiB, the ranged-GET size
// AWS recommends for S3 throughput: smaller chunks cost the store more CPU
// per byte and slowed cold reads against MinIO, and larger ones cut the
// read-ahead window to one chunk and did worse too (doc/perf.md).
//
// A read_committed cold fetch also needs the aborted transactions of its
// range: Reader.CollectAbortedTxns reads them from the .txnindex objects
// of the copy read and the following ones until the search is complete
// (kept in memory like offset indexes); a copy whose record has no
// TxnIndex (nothing aborted, or copied before indexes were uploaded)
// holds none.
//
// # Concurrency
//
// Manager.Run owns one goroutine that, every task interval, walks the
// partitions: the leader copies, expires and cleans orphans; every replica
// applies local retention. Between these full passes the same goroutine
// polls every 200 ms (copyPending) for leader partitions with a sealed,
// committed segment past the copied end, and copies it and applies local
// retention right away, so copy lag and local disk use do not wait for the
// interval. The poll reads only memory (the source's partition list, each
// log's segment list and the copied end cached in the partition's view), so
// its cost is a few allocations per partition and it calls the metadata
// and object stores only for partitions with work; a copy that fails in a
// poll is retried by the next full pass, not every poll. Followers apply
// local retention in full passes only.
//
// A Sweeper (deleted.go), run by every broker next to Manager.Run on its
// own goroutine, removes the objects and records of deleted topics from
// the markers DeleteTopic leaves (metadata.DeletedTopics); each step is
// idempotent, so brokers may race.
//
// Manager.mu guards the per-partition metadata view (parts), which the
// reader consults from fetch goroutines. The Reader bounds concurrent
// object reads with a semaphore of remote.log.reader.threads; read-ahead
// runs in background goroutines (waited for by Close) that take a slot
// per download. Its chunk cache has its own mutex (cache.mu) guarding the
// LRU list and in-flight downloads; files are opened under it, so an
// evicted chunk stays readable through the fds already handed out.
package remote
