// Package controller is Strata's elected controller: the one broker that
// arbitrates partition leadership, as Kafka's controller does. It also
// holds the pure placement and election rules (Place, Reelect,
// PreferredLeader, UncleanLeader, ReassignStep over a Liveness snapshot)
// that topic creation and the controller's own passes use.
//
// # One writer of partition state
//
// Leadership and ISRs change in exactly two ways, both checked by the
// store's compare-and-set on the partition epoch:
//
//   - the controller, through its Term (fenced: nothing it writes lands
//     once its term is over) — every leader election: a lost leader, a
//     broker's controlled shutdown, the ElectLeaders API (ElectLeaders,
//     which any broker reaches by forwarding the request to the
//     controller), the preferred-leader rebalance and reassignments; and
//     every ISR shrink on a broker's loss or controlled shutdown;
//   - a partition's leader changing its own ISR (broker/partition), as
//     Kafka's AlterPartition does: its write is based on the state it
//     serves, so it loses, changing nothing, against any change the
//     controller made meanwhile.
//
// Nothing else writes partition state.
//
// # Election and fencing
//
// Every broker runs a Controller on a Store: the few metadata roles it
// needs (metadata.ControllerElection, metadata.Reassignments and the
// Cache), implemented by metadata/etcdstore in a broker and by
// metadata/memstore in tests. Run campaigns with Store.Campaign, whose
// session lives Options.SessionTTL after a crash. The winner's
// metadata.Term has claimed the role: the store bumped the controller
// epoch and recorded {id, epoch} as the controller in one step — the
// analogue of ZooKeeper's /controller and /controller_epoch (in etcd, a
// txn guarded by the winning concurrency.Election campaign key). Every
// controller write goes through the Term's CompareAndSetPartition, which
// is fenced by the term, so a deposed controller — lease expired,
// partitioned away, campaign key deleted, or replaced — can change
// nothing: its writes fail with metadata.ErrFenced, and it steps down.
// The term's end (Term.Done) ends the controller's work at once. When Run
// stops (ctx cancelled) it closes the term, withdrawing the candidacy and
// the record, so the next campaigner wins at once after a clean stop and
// after one TTL after a crash. Any broker learns the current controller
// through an Observer (metadata.ControllerWatcher).
//
// # What the controller does while elected
//
// It first waits until its store's cache reflects its own claim, then
// reconciles every partition against the live brokers (the cache's
// Brokers, fed by the registration leases), again at every cache change.
// A broker is eligible — to lead, to stay in an ISR, to be elected into
// one — while it is registered and not in controlled shutdown
// (metadata.Broker.ShuttingDown, set by Registration.RequestShutdown), as
// Kafka's controller treats its shuttingDownBrokerIds:
//
//   - a partition whose leader is gone gets a new leader: the first replica
//     (in replica order) that is eligible and in the ISR; only when none is
//     and unclean.leader.election.enable is true (topic override, else
//     the broker default: the dynamic broker configs in the cache, this
//     broker's then the cluster default's, over Options.Config) the first
//     eligible replica, with
//     the ISR reset to it. LeaderEpoch and PartitionEpoch are bumped and
//     ineligible brokers leave the ISR;
//   - a partition led by a broker in controlled shutdown is handed to the
//     first eligible ISR replica the same way, but never uncleanly: with
//     none it keeps its leader;
//   - with no eligible replica the leader becomes metadata.NoLeader (epochs
//     bumped, ISR kept, so a returning ISR member is elected cleanly);
//   - a partition whose leader stays loses dead and shutting-down
//     followers from its ISR (PartitionEpoch bumped, LeaderEpoch kept), as
//     Kafka's controller does on broker failure and controlled shutdown.
//
// ElectLeaders runs the elections of an ElectLeaders request
// (PreferredLeader, UncleanLeader) through the term as well, retrying a
// few times on a lost compare-and-set. No election of any kind picks a
// broker in controlled shutdown.
//
// Writes are compare-and-set on PartitionEpoch, fenced by the controller
// term, up to maxParallelWrites at once. A lost compare-and-set (the
// partition leader changed the ISR meanwhile) is not an error: the cache
// will show the newer state and the next pass re-decides. Other failures
// are retried with backoff (logged at debug level while the store is
// unavailable, metadata.ErrUnavailable: the store logs the outage once). With Options.AutoLeaderRebalance a ticker
// moves leadership back to preferred replicas when a broker leads fewer
// than (100 - ImbalancePercent)% of the partitions it prefers, as Kafka's
// auto.leader.rebalance.enable does.
//
// # Concurrency
//
// Run owns every goroutine of a Controller, and all are joined before a
// term's serveTerm returns: the campaign and the term loop (Run's own
// goroutine), one watcher that ends the term's work when the Term is
// done, and the bounded writers of a reconcile pass (joined before the
// pass returns). The store's own goroutines behind a Term (session
// keep-alives) belong to the store and end with Term.Close. One Run may be
// active at a time. mu guards term, epoch and the changed channel;
// IsLeader, Epoch, Changed and ElectLeaders may be called from any
// goroutine. ElectLeaders writes from the caller's goroutine (plus up to
// maxParallelWrites goroutines of its own, joined before it returns)
// through the current Term; it races with reconcile passes only through
// the store's compare-and-set on PartitionEpoch.
//
// An Observer owns one goroutine (plus the one behind
// WatchController) that ends with its ctx or the store; its mu guards the
// latest record and its changed channel.
//
// # Known gap
//
// The controller judges liveness from cache snapshots, not from the event
// stream: a broker that loses and regains its registration between two
// passes (a fast restart) keeps its leaderships.
package controller
