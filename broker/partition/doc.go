// Package partition holds the partitions this broker serves: each Partition
// wraps a tier log (the hot local log for now) with the partition's role,
// leader epoch, high watermark and topic configuration, and wakes waiting
// fetches when data arrives. The Manager keeps the set of partitions in step
// with the metadata cache: it opens logs for partitions assigned here,
// re-applies topic configs when they change (or when the broker defaults
// they resolve against do: Manager.Run follows the broker's config.Live as
// well), and deletes logs of deleted
// topics: a deleted log's directory is renamed to <name>.<id>-delete at
// once and removed in the background (as Kafka does), because unlinking
// gigabytes just written waits for their writeback, which would otherwise
// hold up Sync and with it every other partition's changes.
//
// Fetch from the closest replica (KIP-392): a follower serves consumers up
// to the high watermark the leader last sent (SetFollowerHighWatermark);
// an offset between it and the log end reads nothing yet. The leader picks
// a consumer's preferred read replica (PreferredReadReplica, Kafka's
// RackAwareReplicaSelector) from what it knows of its in-sync followers,
// and answers a follower's fetch at once when the high watermark moved
// since its last answer (HighWatermarkNews), so that consumers reading from
// followers are not held back by a long-polling replica fetch.
//
// Writes are fenced by leadership, as in Kafka: a write decided under a
// role carries the leader epoch it saw (AppendAsLeader, DeleteRecords for
// a leader; AppendFollower, TruncateTo, TruncateFullyAndStartAt,
// StartAtTier for a follower's fetcher) and fails with
// ErrNotLeaderOrFollower, writing nothing, when the partition no longer has
// that role at that epoch. Retention, local retention of tiered topics and
// the cleaner's segment swap take no role: they apply to every replica
// alike (see compaction and tier/remote).
//
// Reads route with one offset check, Locate: hot offsets cost no I/O; a
// cold one is found in the tier's cached metadata, which is listed (under
// the caller's context) only when it is missing, or stale and without the
// offset.
//
// One writer: the only partition state a broker writes is its ISR as a
// partition's leader (a follower caught up, ExpandISR, or fell behind,
// Run), by compare-and-set on the partition epoch of the state it serves,
// as Kafka's AlterPartition is checked; any change the controller made
// meanwhile wins and the ISR change is dropped. Leaders are elected only
// by the controller (metadata/controller). A broker in controlled
// shutdown is never taken into an ISR.
//
// Open files (Budget): the broker's open-file limit is shared between a
// reserve for connections and the rest, a FileCache of sealed segments'
// files shared by every log (tier/segment), and the partitions, at two
// descriptors each. The resulting partition limit (max.broker.partitions
// can lower it) is published in the broker's registration so that topic
// creation refuses placements beyond it, and Sync opens no partition
// beyond it either: such a partition stays offline (ErrPartitionLimit),
// as one that failed to open, while the others are served.
//
// Concurrency: Manager.mu guards the partition map and serialises Sync; it
// is never held while a log does I/O other than open/close/delete. A
// Partition's roleMu (Kafka's leaderIsrUpdateLock, a sync.RWMutex) is held
// exclusively by applyState while the leader or leader epoch changes, and
// shared by every role-fenced write while it checks its role and writes;
// appends to different partitions and reads never contend on it, and
// appends to one partition are serialised by its log anyway. The log has
// its own lock (see tier/local); Partition.mu guards the waiter list and
// the replication state. Partition.txnMu guards the transaction
// verification guards (txnverify.go) and serialises the appends made
// under them with the transaction markers, so a marker never slips
// between a guard's check and its append; nothing waits on another
// broker under it. Lock order: Manager.mu → Partition.txnMu →
// Partition.roleMu → Partition.mu → the log's lock; never the reverse. No I/O other than the
// local log's runs under roleMu (StartAtTier fetches from the tier first).
// Removals of deleted log directories run on goroutines of their own
// (Manager.removing), which Close waits for.
//
// On disk, each partition lives in <log.dirs[0]>/<topic>-<partition>, with a
// partition.metadata file naming the topic id, so that a topic deleted and
// recreated under the same name never sees the old data, and a
// high-watermark file that Manager.Run rewrites every
// replica.high.watermark.checkpoint.interval.ms when the HW moved (and
// Close writes last). Manager.Run is the one goroutine that also shrinks
// lagging ISRs.
package partition
