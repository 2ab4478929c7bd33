// Package group is the consumer-group coordinator: the classic group
// protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
// OffsetFetch, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete,
// TxnOffsetCommit),
// modelled on Kafka's GroupCoordinator and GroupMetadataManager, and the
// KIP-848 consumer protocol (ConsumerGroupHeartbeat, ConsumerGroupDescribe).
// Classic groups are assignor-agnostic: the coordinator relays the
// members' protocol metadata to the leader and the leader's assignment to
// the members. KIP-848 groups are assigned by the coordinator itself. The
// Kafka protocol stays in broker/handler; this package speaks Go types and
// returns the sentinel errors of errors.go, which the handlers map to
// error codes.
//
// # Ownership and durability
//
// Groups live in the internal topic __consumer_offsets. The coordinator of
// a group is the leader of partition PartitionFor(group, N) =
// abs(hashCode(group)) % N (broker/coordkey), N being the topic's partition count. Run
// follows the metadata: when this broker leads a partition (or its leader
// epoch changes) the coordinator loads it in the background, replaying the
// log from its start; until that ends the partition's groups answer
// ErrLoadInProgress. Partitions led elsewhere answer ErrNotCoordinator.
//
// Every state change that must survive a restart is appended to the
// group's partition before it takes effect, and acknowledged only once the
// partition's high watermark passes the batch (Kafka appends with
// acks=all): the append waits up to offsets.commit.timeout.ms (5 s by
// default) and then fails with ErrCoordinatorNotAvailable, or with
// ErrNotCoordinator when the partition stops being led here meanwhile; the change is then not applied (a
// KIP-848 change stays in memory and its records are written by the next
// heartbeat). A coordinator whose partition is led elsewhere resigns it
// (its groups answer ErrNotCoordinator); the new leader loads it up to its
// log end, as Kafka does, since its high watermark may still lag records
// the old leader acknowledged. Records use Kafka's layout (kmsg types for
// the classic ones), each key opening with an int16 version:
//
//	key v0/v1 OffsetCommitKey{group, topic, partition} → OffsetCommitValue
//	          v3 {offset, leader epoch, metadata, commit time}, or v1 with
//	          an expire time for commits that set a retention (v2-v4);
//	          null value = offset deleted
//	key v2    GroupMetadataKey{group} → GroupMetadataValue v3 {protocol
//	          type, generation, protocol, leader, state time, members with
//	          instance id, timeouts, subscription and assignment};
//	          null value = group deleted
//
// The group record is written when the leader's assignment arrives (then
// the group turns Stable), when a rebalance leaves the group Empty, and
// when a static member is replaced without a rebalance. Offset commits of
// one request go into one batch. A restarted broker restores Stable groups
// with their members and generation, so running consumers keep going
// without a rebalance if they heartbeat within their session timeout.
// Offsets of Empty groups expire offsets.retention.minutes after the
// group emptied (ExpireOffsets, run by Run every
// offsets.retention.check.interval.ms); a group left Empty without offsets
// is removed and gets a tombstone.
//
// # Transactional offset commits (txn_offsets.go)
//
// TxnOffsetCommit's offsets (Kafka's handleTxnCommitOffsets) are appended
// as a transactional batch of the request's producer id and epoch
// (coordlog.Partition.AppendTxn numbers it after the producer's last
// batch in the log, as Kafka's coordinator-origin appends skip the
// client's sequence) and kept per producer id in the group, invisible to
// OffsetFetch (RequireStable answers UNSTABLE_OFFSET_COMMIT for their
// partitions). The member is checked only when the request names one
// (KIP-447). When WriteTxnMarkers appends the producer's marker to the
// group's partition, CompleteTxn (Kafka's onTransactionCompleted)
// commits them, except those a non-transactional commit or deletion
// written after them superseded, or drops them on ABORT. Loading replays
// the same way: a transactional batch's offsets stay pending until their
// marker, so a new coordinator keeps an open transaction's offsets
// pending and drops aborted ones.
//
// # Classic groups: the state machine (classic*.go)
//
// Empty → PreparingRebalance → CompletingRebalance → Stable, and back to
// PreparingRebalance on any membership or metadata change; Dead once
// removed. JoinGroup (v4+ dynamic members first get MEMBER_ID_REQUIRED and
// an id to come back with) parks the member until the join phase ends:
// when every member has rejoined, else after the largest rebalance timeout
// (dynamic members that did not rejoin are dropped). A group leaving Empty
// first waits group.initial.rebalance.delay.ms, until a whole delay passed
// with no new member (at most the rebalance timeout). SyncGroup parks
// followers until the leader sends the assignment; members that do not
// sync within the rebalance timeout are removed.
// Sessions expire session.timeout.ms after a member's last heartbeat,
// join, sync or commit, except while it waits in a rebalance. Static
// members (group.instance.id, KIP-345) keep their place across restarts: a
// join with a known instance id and no member id replaces the old member
// id and keeps its assignment. In a Stable group that happens without a
// rebalance (v9+ leaders get SkipAssignment, KIP-814) unless the group's
// selected protocol would change (Kafka's rule) or, in a "consumer"
// group, the member now subscribes to other topics (Strata's addition, so
// that a restarted member with a new subscription is not ignored; owned
// partitions and user data in the metadata do not count).
//
// # Group kinds (group.go)
//
// A group is a classicGroup (classic*.go) or a consumerGroup
// (consumer*.go), as Kafka's ClassicGroup and ConsumerGroup; the shards
// hold them behind the small group interface, through which the offset
// and admin APIs (offsets.go, admin.go) see them. Both embed groupCore:
// the group id, the lock and the committed offsets. An empty group takes
// the kind of the next member's protocol: a JoinGroup replaces an empty
// consumer group by a classic one (after deleting its KIP-848 records),
// a joining ConsumerGroupHeartbeat replaces an empty classic group by a
// consumer group; offsets stay, and the classic generation goes on (a
// deletion also removes the classic group's record). A classic join to a
// consumer group with members is INCONSISTENT_GROUP_PROTOCOL, a consumer
// heartbeat to a classic group with members GROUP_ID_NOT_FOUND; the other
// classic requests find no member of theirs in a consumer group
// (UNKNOWN_MEMBER_ID), DescribeGroups shows it Dead, and
// ConsumerGroupDescribe does not find a classic group.
//
// # KIP-848 groups (consumer*.go, assign.go)
//
// Every membership, subscription or subscribed-topic metadata change
// bumps the group epoch; the next
// heartbeat recomputes the target assignment with the "uniform" (balanced,
// sticky) or "range" assignor over the topics SetTopics provides, and each
// heartbeat reconciles its member one step (Kafka's CurrentAssignmentBuilder):
// partitions leaving a member are revoked first and the member keeps its
// epoch until a heartbeat shows it no longer owns them; then it gets the
// target epoch and the target partitions nobody else still owns (the
// others follow on later heartbeats). A member that does not revoke within
// its rebalance timeout, or does not heartbeat within
// group.consumer.session.timeout.ms, is removed. Static members leave
// temporarily with epoch -2 and keep their partitions until their instance
// id rejoins. OffsetCommit v9+ and OffsetFetch v9+ check member epochs.
// Their state is written to __consumer_offsets as Kafka's records of key
// versions 3 and 5-8 (consumer_records.go: group epoch, member metadata,
// target assignment epoch and per member, current member assignment), the
// records that changed after each heartbeat or expiry in one batch, so a
// restarted or new coordinator restores the members with their epochs and
// assignments and they keep heartbeating without UNKNOWN_MEMBER_ID.
//
// # Concurrency
//
// The shard table is broker/coordshard's, shared with broker/txn: its
// lock (one RWMutex) guards the led partitions, their loaded flags and
// the partition count, and also each shard's group map and its producers
// with pending transactional offsets (txnGroups), which this package
// reads only inside the table's View and changes inside Update or
// Publish. Each group has its own mutex (groupCore.mu) guarding all of
// its state, its offsets (pending ones included); requests of different
// groups never contend. Lock order: group → table (a group removing
// itself from its shard, or putting its replacement of the other kind
// there); lookups take the table's lock alone and release it before
// locking a group. A group dropped from its shard
// (deleted, resigned or replaced) is marked removed under its lock, and
// a request that then gets the lock looks the group up again. Appends to
// __consumer_offsets happen with the group's lock held, so a group's
// records are in the log in the order its state changed (lock order
// continues group → the log's locks); the wait for the high watermark
// happens under the group's lock too and ends at the latest when the
// shard is resigned (its Stop channel), so Resign never waits on it.
//
// Timers (session expiry, join-phase and sync deadlines, MEMBER_ID_REQUIRED
// ids, KIP-848 sessions and revocation deadlines) are time.AfterFunc
// callbacks that lock the group and check that they still apply (member
// still present, same generation or join sequence); nothing else runs in
// the background except one loader goroutine per partition being loaded
// and Run; tests drive them with testing/synctest's fake clock. Parked
// JoinGroup and SyncGroup requests wait on a buffered channel of their
// member, filled under the group lock; the handler's goroutine waits on
// it or on its connection's context.
package group
