// Package remote is the cold tier of a partition log: the remote log
// manager copies sealed, committed segments to an object store and expires
// them, and the reader serves cold offsets from the bucket through an
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
//	<topic>-<topicID hex>/<partition>/manifest.json                  finished segments (disaster recovery)
//
// The object store's own prefix (remote.log.storage.s3.prefix) comes
// before these keys.
//
// # Metadata
//
// One Segment record (JSON) per copy lives in a MetaStore (etcd in the
// broker, see metadata/etcdstore/remote.go), keyed by "<base:020>-<copyID>"
// and written with leader-epoch fencing. A copy moves through
// COPY_STARTED → COPY_FINISHED → DELETE_STARTED → DELETE_FINISHED; only
// finished copies are read or allow deleting the local segment. Records in
// DELETE_FINISHED are pruned except the finished copy with the highest end
// offset, which remembers how far the partition was ever copied; an
// interrupted copy (never finished) is deleted and pruned.
//
// # Reads
//
// The broker routes a read with one visible predicate,
// broker/partition.(*Partition).IsCold: the offset is below the local log
// start and a finished copy holds it. Reader.Read locates the copy, finds
// the position with the copy's offset index (kept in memory), fetches the
// .log object in ChunkSize ranged GETs into the on-disk chunk cache
// (bounded by remote.log.reader.cache.bytes, LRU) and returns whole
// batches as a region of a cache file, so the bytes still go out with
// sendfile; a first batch that spans two chunks is copied to an unlinked
// span file. The next chunk is read ahead in the background when a reader
// slot is free.
//
// # Concurrency
//
// Manager.Run owns one goroutine that, every task interval, walks the
// partitions: the leader copies, expires and cleans orphans; every replica
// applies local retention. Manager.mu guards the per-partition metadata
// view (parts), which the reader consults from fetch goroutines. The
// Reader bounds concurrent object reads with a semaphore of
// remote.log.reader.threads; its chunk cache has its own mutex (cache.mu)
// guarding the LRU list and in-flight downloads; files are opened under
// it, so an evicted chunk stays readable through the fds already handed
// out.
package remote
