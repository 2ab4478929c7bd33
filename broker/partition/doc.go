// Package partition holds the partitions this broker serves: each Partition
// wraps a tier log (the hot local log for now) with the partition's role,
// leader epoch, high watermark and topic configuration, and wakes waiting
// fetches when data arrives. The Manager keeps the set of partitions in step
// with the metadata cache: it opens logs for partitions assigned here,
// re-applies topic configs when they change, and deletes logs of deleted
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
// Concurrency: Manager.mu guards the partition map and serialises Sync; it
// is never held while a log does I/O other than open/close/delete. A
// Partition's log has its own lock (see tier/local); Partition.mu guards only
// the waiter list. Lock order: Manager.mu → Partition.mu; never the reverse.
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
