// Package metadatatest is the one conformance suite for metadata.Store
// implementations (metadata/etcdstore on embedded etcd, metadata/memstore).
// Every implementation's tests call Run with a constructor of fresh,
// empty clusters; the suite checks the contracts written on the role
// interfaces: topics and their errors, compare-and-set on partition
// epochs, write visibility and the Cache across handles of one backend,
// dynamic broker configs (cluster default and per broker),
// broker registrations and their leases, producer id blocks, the
// controller election with its fencing, reassignment requests,
// remote-segment fencing, deleted-topic markers and topic restore.
//
// Faults the suite needs (a lease expiring) come from the Cluster's
// hooks, so the suite never waits for a TTL. Its builders and waits
// (Part, TopicOf, WaitClosed) serve the implementations' own tests too.
//
// # Concurrency
//
// Run calls newCluster once per subtest, from the subtest's goroutine;
// the subtests run one after another. Subtests that start goroutines
// (racing writers, a waiting candidate) join them before they return.
package metadatatest
