// Package controller is Strata's elected controller: the one broker that
// arbitrates partition leadership, as Kafka's controller does. It also
// holds the pure placement and election rules (Place, Reelect,
// PreferredLeader, UncleanLeader) that topic creation and the ElectLeaders
// API reuse.
//
// # Election and fencing
//
// Every broker runs a Controller. Run campaigns with etcd's
// concurrency.Election under the store's controller election prefix,
// using a session whose lease has Options.SessionTTL. The winner claims
// the role with etcdstore.Store.ClaimController, which bumps the
// controller epoch and writes the controller record (id and epoch,
// attached to the session lease) in one txn guarded by the winning
// campaign key — the etcd analogue of ZooKeeper's /controller and
// /controller_epoch. Every controller write is an etcd txn that also
// compares that campaign key's create revision and the epoch
// (etcdstore.Fence), so a deposed controller — lease expired, partitioned
// away, or replaced — can change nothing: its writes fail with
// etcdstore.ErrFenced, and it steps down. When the session ends (lease
// lost, ctx cancelled) the controller revokes the lease, so the next
// campaigner wins at once after a clean stop and after one TTL after a
// crash. Any broker learns the current controller through an Observer.
//
// # What the controller does while elected
//
// It first waits until its store's cache reflects its own claim, then
// reconciles every partition against the live brokers (the cache's
// Brokers, fed by the registration leases), again at every cache change:
//
//   - a partition whose leader is gone gets a new leader: the first replica
//     (in replica order) that is alive and in the ISR; only when none is and
//     unclean.leader.election.enable is true (topic override, else
//     Options.UncleanLeaderElection) the first live replica, with the ISR
//     reset to it. LeaderEpoch and PartitionEpoch are bumped and dead
//     brokers leave the ISR;
//   - with no eligible replica the leader becomes metadata.NoLeader (epochs
//     bumped, ISR kept, so a returning ISR member is elected cleanly);
//   - a partition with a live leader loses dead followers from its ISR
//     (PartitionEpoch bumped, LeaderEpoch kept), as Kafka's controller does
//     on broker failure.
//
// Writes are compare-and-set on PartitionEpoch, fenced by the controller
// term, up to maxParallelWrites at once. A lost compare-and-set (the
// partition leader changed the ISR meanwhile) is not an error: the cache
// will show the newer state and the next pass re-decides. Other failures
// are retried with backoff. With Options.AutoLeaderRebalance a ticker
// moves leadership back to preferred replicas when a broker leads fewer
// than (100 - ImbalancePercent)% of the partitions it prefers, as Kafka's
// auto.leader.rebalance.enable does.
//
// # Concurrency
//
// Run owns every goroutine of a Controller, and all are joined before a
// term's serveTerm returns: the campaign and the term loop (Run's own
// goroutine), one watcher that ends the term when the session ends, one
// that ends it when the campaign key is deleted, and the bounded writers
// of a reconcile pass (joined before the pass returns). One Run may be
// active at a time. mu guards term, epoch and the changed channel;
// IsLeader, Epoch, Changed and ElectLeader may be called from any
// goroutine. ElectLeader writes from the caller's goroutine with the
// current fence; it races with reconcile passes only through etcd's
// compare-and-set on PartitionEpoch.
//
// An Observer owns one goroutine (plus the one behind
// etcdstore.Store.WatchController) that ends with its ctx or the store;
// its mu guards the latest record and its changed channel.
//
// # Known gap
//
// The controller judges liveness from cache snapshots, not from the event
// stream: a broker that loses and regains its registration between two
// passes (a fast restart) keeps its leaderships.
package controller
