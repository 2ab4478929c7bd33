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
// EndTxn is recognised by the bumped epoch.
//
// # Concurrency
//
// The package has no goroutines, timers or locks of its own, and reads no
// clock: callers pass the time. A Metadata is not safe for concurrent
// use: the coordinator holds one mutex per transactional id around every
// call on its Metadata, from prepare to complete or cancel, except while
// it waits for the log write (the pending state keeps other changes out
// meanwhile), as Kafka's TransactionMetadata.inLock does. Everything else
// (PartitionFor, the record codecs, ErrorCode) is a pure function.
package txn
