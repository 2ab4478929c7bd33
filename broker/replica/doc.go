// Package replica is the follower side of replication: for each leader
// broker it runs num.replica.fetchers fetch loops (one by default) that
// copy the partitions this broker follows from that leader, each loop its
// fixed share of them, as Kafka's ReplicaFetcherThreads do. Before
// fetching a partition under a new leader epoch, the loop asks the leader
// (OffsetForLeaderEpoch) where their logs agree and truncates a divergent
// tail; then it fetches from its log end with its replica id, appends what
// it gets as follower and takes the leader's high watermark and log start
// (records the leader deleted go here too). A follower
// whose next offset only the tier holds (OFFSET_MOVED_TO_TIERED_STORAGE,
// KIP-405) restarts its log at the leader's local log start instead of
// copying the bucket back to disk (tiered.go). A partition whose fetch
// fails is left out of fetches for a while (Kafka delays it likewise); the
// others go on. A fetch waits at the leader up to replica.fetch.wait.max.ms,
// but a change of the loop's partitions cuts it short (reconnecting), so
// that a new partition, as after a topic's creation, is fetched at once
// rather than after the wait. Each loop keeps a fetch session with its
// leader (KIP-227, broker/fetchsession): after a full fetch, its fetches
// name only the partitions whose fetch changed, and the leader answers
// only those with news; a session error, a lost answer or a new
// connection sends a full fetch again.
//
// num.replica.fetchers may change at run time (a dynamic broker config):
// SetFetchers stops every loop, waits until they ended, and spreads the
// followed partitions over the new count; the broker calls it when its
// configuration changes.
//
// Concurrency: Fetcher.followMu serialises Follow and SetFetchers (so a
// partition is never in loops of two counts at once); Fetcher.mu guards
// the map of loops and the count; each loop goroutine owns its
// peer.Conn, its fetch session and its partitions' follow state, and
// loop.mu guards the loop's partition set, which Follow replaces after
// every metadata sync. During a fetch a short-lived goroutine watches for that change and
// cancels the request.
package replica
