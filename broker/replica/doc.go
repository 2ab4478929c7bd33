// Package replica is the follower side of replication: for each leader
// broker it runs one fetch loop that copies the partitions this broker
// follows from that leader, as Kafka's ReplicaFetcherThread does. Before
// fetching a partition under a new leader epoch, the loop asks the leader
// (OffsetForLeaderEpoch) where their logs agree and truncates a divergent
// tail; then it fetches from its log end with its replica id, appends what
// it gets as follower and takes the leader's high watermark. A follower
// whose next offset only the tier holds (OFFSET_MOVED_TO_TIERED_STORAGE,
// KIP-405) restarts its log at the leader's local log start instead of
// copying the bucket back to disk (tiered.go).
//
// Concurrency: Fetcher.mu guards the map of loops; each loop goroutine owns
// its kgo client, and loop.mu guards the loop's partition set, which
// Follow replaces after every metadata sync.
package replica
