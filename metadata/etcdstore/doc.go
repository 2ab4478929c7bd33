// Package etcdstore keeps Strata's control-plane metadata in etcd and
// implements metadata.Store, every role of package metadata, on it.
// StartEmbedded runs a single-member etcd inside the process for
// single-node deployments and tests; a cluster points Open at a real
// etcd, over TLS with a client certificate (WithTLSFiles) and as an etcd
// user (WithAuth) where that etcd asks for them. Only the broker's
// composition root opens it; everything else
// depends on metadata's role interfaces (metadata/memstore implements the
// same ones in memory, and metadata/metadatatest checks both).
//
// # Key layout
//
// All keys live under a prefix (default "/strata"; keys.go spells the
// core keys, and each feature file its own directory):
//
//	<prefix>/cluster/id             cluster id, 22 base64url chars; created once by a txn
//	<prefix>/topics/<name>          {"id":"<base64url topic id>","configs":{"k":"v"}} (overrides only)
//	<prefix>/partitions/<name>/<p>  {"replicas":[1,2],"leader":1,"leaderEpoch":0,"partitionEpoch":0,"isr":[1,2]}
//	<prefix>/brokers/ids/<id>       {"id":1,"host":"h","port":9092,"rack":"r","incarnation":"…","shuttingDown":true}, attached to the broker's lease
//	<prefix>/configs/brokers/<id>   {"configs":{"k":"v"}}: broker id's dynamic configs (brokerconfigs.go)
//	<prefix>/configs/brokers/<default>  {"configs":{"k":"v"}}: the cluster-wide default of the dynamic broker configs
//	<prefix>/scram/users/<user>     {"credentials":{"SCRAM-SHA-256":{"salt":…,"iterations":4096,"stored_key":…,"server_key":…}}}: one user's SCRAM credentials, the name path-escaped (scram.go)
//	<prefix>/acls/<TYPE>/<PATTERN>/<name>/<principal>/<host>/<OP>/<PERMISSION>  {}: one ACL binding, the strings path-escaped (acls.go)
//	<prefix>/quotas/users/<user>[/clients/<client>], quotas/clients/<client>, quotas/ips/<ip>  {"values":{"producer_byte_rate":1048576}}: one client-quota entity, names path-escaped, <default> for a default (quotas.go)
//	<prefix>/producer-ids/next      next free producer id, decimal
//	<prefix>/controller/election/<lease>  campaign keys of concurrency.Election; the oldest one leads
//	<prefix>/controller/epoch       controller epoch, decimal; bumped by every elected controller
//	<prefix>/controller/leader      {"id":1,"epoch":3}, attached to the controller's session lease
//	<prefix>/reassignments/<name>/<p>  target replica list of a partition reassignment (reassign.go)
//	<prefix>/remote/<id hex>/<p>/seg/<segment>  one remote segment copy's record (remote.go)
//	<prefix>/remote/<id hex>/<p>/fence  highest leader epoch that wrote the partition's records
//	<prefix>/deleted-topics/<id hex>  name of a deleted tiered topic whose remote data is still to go (deleted.go)
//
// Topic names cannot contain '/', so every key parses unambiguously.
// Values are JSON; unknown fields are ignored so fields can be added.
//
// # Atomicity
//
// CreateTopic is one txn (topic key absent → put topic and all
// partitions), DeleteTopic one txn (topic unchanged → delete topic and the
// partitions/<name>/ range and, for a tiered topic, put its deleted-topics
// marker; remote segment writes fail while the marker exists). A txn holds
// one op per partition, so an external etcd needs --max-txn-ops above
// metadata.MaxPartitionsPerWrite and --max-request-bytes above what that
// many partitions take (the embedded server allows 16384 ops and 8 MiB);
// a txn beyond etcd's limits is metadata.ErrTooLarge, a write etcd
// refuses for lack of space (its NOSPACE alarm) metadata.ErrNoSpace.
// SetBrokerConfigs, SetScramCredentials and SetClientQuotas are one put
// (or delete) of their entity's key. CreateACLs and DeleteACLs are txns
// of at most 128 puts or deletes (etcd's default --max-txn-ops), each
// atomic.
// AddPartitions, SetTopicConfigs,
// CompareAndSetPartition and AllocateProducerIDs read, then write in a txn
// guarded by the key's create revision (topic incarnation) or mod
// revision; a controller Term's compare-and-set adds its fence to the txn
// (its campaign key's create revision and controller/epoch's value).
// Broker keys are ephemeral: a lease with keep-alives, like ZooKeeper's
// /brokers/ids. A controlled shutdown rewrites the key in a txn guarded by
// its lease (LeaseValue), so only the registration that holds it can.
//
// # Visibility
//
// Every mutating method returns the etcd revision of its write and, before
// returning, waits until this Store's Cache applied that revision; "create
// topic, then read the cache" therefore sees the topic. Other Stores
// catch up with Cache().WaitRevision(ctx, rev).
//
// # Space
//
// The embedded server's space guard (space.go) keeps etcd from ever
// finding its disk full, which would make it exit: below a reserve of
// free space it raises etcd's NOSPACE alarm itself, so writes that would
// grow etcd fail cleanly while reads and deletions work, and it lifts the
// alarm (after compaction and defragmentation when the quota was the
// cause) once space is back. Embedded.AllowWrite lets the broker's own
// writes to that disk leave the reserve alone.
//
// # Outages
//
// etcd out of reach (stopped, paused, without quorum, cut off) is a state
// the store rides out, never a reason to give up: a registration's
// keep-alives are retried (brokers.go), and it is lost only when etcd
// answers that the lease is gone; the watch keeps the cache's last state
// and re-lists when etcd answers again; failed calls wrap
// metadata.ErrUnavailable. outage.go logs an outage once — a warning
// when a periodic request first fails, progress every 10 s with the
// lease's state, and its end — and the background loops log their own
// failures then only at debug level. The client detects a member that
// stopped answering with gRPC keep-alives and reconnects with a backoff
// capped at a second, so a returning etcd is used before the leases it
// extended run out.
//
// # Concurrency
//
// Store methods are safe for concurrent use. Goroutines owned by a Store:
// one watch loop (watch.go) that is the only writer of the Cache — it lists
// the prefix at revision R, watches from R+1, applies each revision's
// events as one Cache.Apply, and re-lists with backoff when the watch
// breaks (compaction, lost leader); one keep-alive loop per open broker
// registration (brokers.go), which stores its lease deadline atomically;
// one per WatchController call, ending with its ctx or the store. A controller Term (election.go) owns two
// goroutines, joined by its Close: one ends the term when the session
// ends, one when the campaign key is deleted; the session's keep-alives
// run on the client's context, so a term outlives the ctx of Campaign (a
// session the client stops hearing from for a TTL ends the term: a
// controller does not act on a lease it cannot vouch for).
// Store.mu guards only the set of open registrations (the outage log's
// own mutex is taken before it, to read their lease deadlines); Store.Close
// withdraws them, stops the watch and closes the client (open terms then
// end with metadata.ErrSessionLost; their leases expire after the TTL, as
// after a crash). Close Stores before the Embedded server they talk to.
// An Embedded's space guard runs on the goroutine that calls Guard (the
// broker gives it one); AllowWrite and SpaceStats are safe from any
// goroutine.
package etcdstore
