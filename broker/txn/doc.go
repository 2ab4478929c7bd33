// Package txn is the transaction coordinator's state, modelled on Kafka's
// TransactionMetadata, TransactionLog and TransactionCoordinator: the
// state machine of a transactional id, the records that make it durable
// in the internal topic __transaction_state, and the checks on timeouts
// and expiry. The Kafka protocol stays in broker/handler; this package
// speaks Go types and returns the sentinel errors of errors.go, which
// ErrorCode maps to Kafka's codes.
//
// # Ownership and durability
//
// As the group coordinator does for __consumer_offsets (broker/group),
// the coordinator of a transactional id is the leader of partition
// PartitionFor(id, N) of the compacted __transaction_state, N being
// transaction.state.log.num.partitions; it loads the partition's records
// when it becomes leader and drops them when it loses leadership. Each
// record is keyed by the transactional id (TransactionLogKey v0) and holds
// the whole state after a transition (TransactionLogValue v1: producer id
// and epoch, timeout, state, partitions, start and update times, and the
// tagged previous and next producer ids and client transaction version);
// an expired id gets a tombstone. Loading keeps the last record of each id
// (DecodeRecord).
//
// # The state machine
//
//	Empty ─AddPartitions→ Ongoing ─EndTxn→ PrepareCommit → CompleteCommit
//	                         │     ─EndTxn/timeout→ PrepareAbort → CompleteAbort
//	                         └─InitProducerId/timeout→ PrepareEpochFence → PrepareAbort
//	Empty, Complete* ─InitProducerId→ Empty;  ─AddPartitions→ Ongoing;
//	                 ─expiry→ Dead (tombstone);  ─abort (TV2)→ PrepareAbort
//
// ValidTransition holds Kafka's table of valid previous states. A change
// happens in two steps: a Prepare* method computes the target Txn and
// marks it pending (a second change then fails until the first ends); the
// caller logs the target, and on success applies it with
// CompleteTransition, which checks it the way Kafka does, or on failure
// drops it with CancelTransition. Epochs follow Kafka 4.x: InitProducerId
// bumps the epoch (or fences an ongoing transaction's producer, or moves
// to a new producer id once the epoch is exhausted); a version 2 client's
// (KIP-890 part 2) every commit and abort bumps it too, and its retried
// EndTxn is recognised by the bumped epoch. Such a client (EndTxn v5,
// produce v12, TxnOffsetCommit v5) does not add partitions itself: their
// leaders do, with AddPartitionsToTxn v5 (AddPartitions at version 2).
// Leaders of older clients' partitions ask VerifyPartitions (VerifyOnly,
// KIP-890 part 1), which changes nothing and answers
// ErrTransactionAbortable for a partition not in the transaction.
//
// # The coordinator (coordinator.go, load.go, handle.go, markers.go, sweep.go)
//
// Coordinator shares broker/group's shard table (broker/coordshard): one
// shard per led __transaction_state partition, loaded in the background when this
// broker becomes its leader or its leader epoch changes (Run follows the
// metadata through coordlog.Follow), dropped when it loses it. The leader
// epoch is the shard's coordinator epoch. Until its load ends a
// partition's ids answer ErrLoadInProgress; ids of partitions led
// elsewhere ErrNotCoordinator. A transition is logged through
// coordlog.Partition.Append, fenced by the shard's epoch and waiting for
// the high watermark (acks=all), and applied with CompleteTransition only
// if the shard is still the partition's current one (Kafka's coordinator
// epoch check); otherwise it is cancelled (FenceFailed for the abort of a
// fence) and the request answers ErrNotCoordinator (leadership or epoch
// lost), ErrLoadInProgress (the partition is being reloaded) or
// ErrCoordinatorNotAvailable (the write failed or timed out). EndTxn logs
// PrepareCommit or PrepareAbort, answers, and hands the markers to the
// MarkerWriter; when it reports them written the coordinator logs
// Complete*. A load resumes the transactions it finds ending. Sweep aborts
// timed-out transactions, fencing their producer, and writes the
// tombstones of expired ids (only of ids with no transaction open, so a
// producer id in use never loses its transactional id). Every transition
// that takes effect is logged at debug (transactional id, producer id and
// epoch, from and to state); Stats counts the open transactions and the
// completed commits and aborts for the broker's metrics.
//
// # Concurrency
//
// The state machine (metadata.go, requests.go, endtxn.go, complete.go)
// has no goroutines, timers or locks of its own and reads no clock:
// callers pass the time. A Metadata is not safe for concurrent use.
//
// The shard table is broker/coordshard's: its lock (one RWMutex) guards
// the led partitions, their loaded flags, the partition count, and each
// shard's id map, which this package reads only inside the table's View
// and changes inside Update or Publish. Each transactional id has its
// own mutex (entry.mu) held around every call on its Metadata, from
// prepare through the log write to complete or cancel, as broker/group
// holds a group's lock across its appends: a second request on the id
// waits for the write rather than seeing the pending state. The wait for
// the high watermark ends at the latest when the shard is resigned
// (its Stop channel). Lock order: entry → table (the epoch check after
// a write, forgetting an expired id); lookups take the table's lock alone
// and release it before locking an entry, and an entry dropped meanwhile
// (removed, under its lock) is looked up again. The marker writer runs
// outside these locks: its done callback takes the entry's lock again.
// Goroutines: one loader per partition being loaded, Run and the Sweep it
// starts, and one per transaction completing after its markers; tests
// drive the sweep on testing/synctest's clock. Everything else
// (PartitionFor, the record codecs, ErrorCode) is a pure function.
package txn
