// Package arch holds the architecture tests: the import rules of
// ARCHITECTURE.md checked on the module's real import graph (go list),
// so that a change that breaks the layering fails like any other test.
//
//   - Imports point down: cmd (and perf) → broker → compaction → tier →
//     metadata; config, stdlib-only, may be imported by every layer; test/
//     is imported by no production package.
//   - Package metadata imports only the standard library.
//   - Only the composition root (package broker, in server.go) and
//     cmd/strata import metadata/etcdstore; every other part depends on
//     metadata's role interfaces. Among tests, only etcdstore's own and
//     the controller's failover tests on real etcd may import it.
//   - Only metadata/etcdstore imports the etcd client (tests under test/
//     may talk to etcd directly).
//   - kmsg stays inside broker/, tier/record and test/.
//
// Concurrency: none; the test runs one go list.
package arch
