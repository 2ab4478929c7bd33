// Package memstore is an in-memory metadata store: every role of package
// metadata with etcdstore's semantics, for in-process tests of the
// broker's handlers, the controller and the tier, where each test takes
// milliseconds and needs no etcd or TCP. It is not a mock: it passes the
// same conformance suite as etcdstore (metadata/metadatatest).
//
// A Backend is the shared state (what an etcd cluster is to etcdstore);
// Open gives a Store handle on it, as etcdstore.Open gives each broker
// its own connection. Several handles on one Backend see each other's
// writes, registrations and controller election.
//
// # Semantics
//
// Every write commits at the next revision of the Backend (one revision
// per write, like one etcd txn) and is applied, in commit order, to the
// Cache of every open handle through Cache.Apply with the same changes
// the etcd watch delivers (a topic deletion is the topic's delete and one
// delete per partition in one Apply); Open loads a new handle's Cache with
// Cache.Load. Writes that etcdstore keeps outside the Cache (reassignment
// requests, remote-segment records, deleted-topic markers, the
// controller's keys, producer ids) still advance the revision. Inputs are
// copied on the way in and results on the way out, so callers may modify
// what they passed or got.
//
// Compare-and-set checks the partition epoch; a controller Term's writes
// also check that the term lasts (metadata.ErrFenced otherwise). Broker
// registrations and election sessions are leases the handle keeps alive:
// they end at Close (registration or term), when their handle closes
// (a stopping process: registrations are withdrawn, election sessions end
// with metadata.ErrSessionLost at once, where etcd waits out the TTL), or
// through the fault hooks ExpireBroker and ExpireControllerSession, which
// make a lease expire now — deterministic stand-ins for a TTL running
// out, so tests never wait on the clock. TTLs are accepted and ignored.
// Candidates are elected in campaign order; when the elected one's
// session ends the next claims the next controller epoch.
//
// # Concurrency
//
// Every method of Store, Term and Registration is safe for concurrent use.
// One mutex, Backend.mu, guards all state: the Backend's content, its
// revision, the election, and every handle's bookkeeping (its open
// registrations and candidacies, its closed flag). Writes feed the
// handles' caches while holding it; Cache.Apply never calls out, so the
// lock order is Backend.mu, then a Cache's own lock, and nothing else is
// taken under Backend.mu. Waits happen without the lock, on channels:
// Campaign waits for its candidacy to head the line (a channel closed
// under the lock when it does) or end; WatchController starts one
// goroutine per call that waits on the controller record's change channel
// (closed and replaced at every change) and ends with its ctx or the
// handle. No other goroutine exists.
package memstore
