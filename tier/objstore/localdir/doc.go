// Package localdir is an objstore.ObjectStore over a local directory: the
// zero-setup backend of the tier (remote.log.storage.backend=local), used by
// `make run` and by tests.
//
// # Layout
//
//	<dir>/objects/<key>   one file per object; the '/'-separated segments of
//	                      the key are subdirectories, created on demand and
//	                      removed by Delete when they become empty
//	<dir>/tmp/put-*       a Put in progress (or left by a crash; New removes
//	                      those older than an hour)
//
// Put writes a temporary file, fsyncs it, renames it over objects/<key> and
// fsyncs the directory, so an object is either absent, the old version or the
// new one, also across a crash. The tmp directory lives on the same file
// system as the objects, so the rename is atomic.
//
// Because keys are paths, a key cannot also be a prefix directory of another
// key: with "a/b" stored, Put("a") fails (and vice versa). The tier's key
// layout never does that.
//
// # Concurrency
//
// A Store holds no mutable state and no goroutines; every operation is a
// short sequence of file-system calls whose atomic steps (rename, unlink)
// give the package-level guarantees: concurrent Puts of one key are
// last-writer-wins, and an open reader keeps the version (inode) it opened.
// A Put racing with a Delete that prunes the Put's empty parent directory
// retries its rename a bounded number of times.
package localdir
