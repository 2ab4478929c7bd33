// Package backend builds the broker's object store from its configuration:
// remote.log.storage.backend selects localdir (remote.log.storage.local.dir,
// by default <first log dir>/tier-store) or s3 (remote.log.storage.s3.*).
// It is a separate package so that objstore itself imports neither backend.
//
// # Concurrency
//
// FromConfig is a plain constructor; it holds no state and starts no
// goroutines. The store it returns is safe for concurrent use.
package backend
