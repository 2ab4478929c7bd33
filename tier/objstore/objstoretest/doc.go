// Package objstoretest is the one conformance suite for objstore.ObjectStore
// implementations. Every implementation's tests call Run with a constructor
// of fresh, empty stores; the suite checks each contract written on the
// interface (atomic puts and overwrites, ranged reads and their edges, head,
// list order and prefixes, idempotent delete, key validation, size
// mismatches, cancellation, concurrent use, and a large object big enough to
// take a backend's multipart path, see LargeObjectSize).
//
// # Concurrency
//
// Run calls newStore once per subtest, from the subtest's goroutine; the
// subtests run one after another, and the concurrency subtest starts and
// joins its own goroutines before it returns.
package objstoretest
