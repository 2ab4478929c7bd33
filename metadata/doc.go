// Package metadata holds Strata's control-plane model: topics with their
// ids, config overrides and partition states, live brokers, and the small
// role interfaces a metadata store implements. It imports only the
// standard library, so every layer may depend on it.
//
// # Roles
//
// Each caller depends on the roles it uses, never on an implementation:
//
//   - Topics, BrokerConfigs, ProducerIDs, Reassignments: what request
//     handlers change (reads go through the Cache); BrokerConfigs holds
//     the dynamic broker configs, of each broker and of the cluster
//     default (ClusterDefault), which brokers follow from their Cache;
//   - ScramCredentials: each user's SCRAM credentials by mechanism (salt,
//     iterations, StoredKey, ServerKey), written by
//     AlterUserScramCredentials and read by SCRAM authentication from the
//     Cache (ScramCredential);
//   - Partitions: a partition's leader, ISR and replicas. It has two
//     writers, both compare-and-set on the partition epoch: the elected
//     controller through its fenced Term (every leader election, and ISR
//     changes for lost or shutting-down brokers), and a partition's
//     leader changing its own ISR (Kafka's AlterPartition);
//   - Brokers and Registration: a broker's lease-backed presence, and its
//     controlled shutdown (Registration.RequestShutdown);
//   - ControllerElection, Term and ControllerWatcher: the controller's
//     campaign, its fenced writes (ErrFenced once the term is over) and
//     the controller record every broker reports;
//   - RemoteSegments, DeletedTopics, TopicRestorer: the tier's
//     leader-epoch-fenced segment records, the markers of deleted tiered
//     topics, and disaster recovery.
//
// Store combines them all; only the composition root holds one.
// metadata/etcdstore implements every role on etcd, metadata/memstore in
// memory (for in-process tests), and metadata/metadatatest is the one
// conformance suite both pass.
//
// # Writes and visibility
//
// Every mutating Store method returns the store revision its write
// committed at. Implementations also wait until their own Cache has
// applied that revision before returning, so a caller that writes and then
// reads its Cache sees its write. If that wait is cut short by ctx, the
// method returns the revision together with an error wrapping ctx.Err():
// the write is committed, only its visibility is unconfirmed (a Kafka
// handler answers REQUEST_TIMED_OUT, and a retry finds e.g.
// ErrTopicExists). Another process's cache is synchronised with
// Cache.WaitRevision(ctx, rev).
//
// A call that could not reach the store, or that the store could not
// answer (no quorum, a timeout), fails with an error wrapping
// ErrUnavailable: the outage passes, the call may be retried, and the
// store logs the outage itself, so loops that retry log such failures
// only at debug level.
//
// # Cache
//
// Cache is the in-memory view every broker reads from. A store feeds it with
// Load (a full listing at one revision) and Apply (the key-level changes of
// one revision, in commit order); readers never talk to the store. While
// the store is out of reach the cache keeps its last state, and the broker
// serves from it. Values
// handed out by the Cache are immutable snapshots that share memory with the
// cache: callers must not modify a returned Topic's maps or a
// PartitionState's slices (use Clone for a private copy). Because every
// update builds new maps rather than changing published ones, a snapshot a
// reader holds stays consistent forever, even while the cache moves on.
//
// # Concurrency
//
// Cache is safe for concurrent use. One sync.RWMutex guards all of its
// state (revision, topics, brokers, dynamic broker configs, the
// sorted-list memos and the change channel); no method calls out while holding it. The feeding goroutine
// belongs to the store, not to the Cache. Change notification is
// closed-channel broadcast: Changed returns a channel that is closed (and
// replaced) by the next update, so any number of goroutines can wait
// without registering.
package metadata
