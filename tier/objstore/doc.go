// Package objstore is the seam between Strata's cold tier and the object
// storage that holds it: S3, MinIO or a plain directory.
//
// ObjectStore is deliberately small: whole-object atomic puts, ranged gets,
// head, list by prefix in lexical order, idempotent delete. Everything the
// tier needs (segment files, indexes, manifests) is expressed with these five
// operations, so a new backend is a few hundred lines and is proven correct by
// one conformance suite, objstoretest.Run, that every implementation runs.
//
// Implementations:
//
//	localdir  a local directory (the zero-setup default; temp file + rename)
//	s3        S3-compatible storage via aws-sdk-go-v2 (AWS S3, MinIO)
//	backend   builds the configured one from config.Broker (FromConfig)
//
// # Keys
//
// A key is 1 to MaxKeyLen bytes of valid UTF-8 without control characters,
// made of '/'-separated segments of at most MaxSegmentLen bytes that are
// neither empty nor "." or "..": no leading or trailing '/', no "//". ValidateKey is the one rule every
// implementation applies, so a key accepted by one backend is accepted by
// all. The tier's layout (owned by tier/remote) is
//
//	<topic>-<topicID>/<partition>/<base offset:020>-<copy id>.<kind>
//
// where the unique copy id keeps a deposed leader's late upload from ever
// replacing a valid copy; the store itself does not need create-only puts.
//
// # Errors
//
// Errors are wrapped with the operation and key; callers test them with
// errors.Is against the sentinels: ErrNotExist (absent object),
// ErrInvalidKey, ErrInvalidRange, ErrSizeMismatch (the body of a Put did not
// have the announced size) and ErrUnavailable (the store could not be
// reached or answered with a server-side failure after the backend's own
// retries: the operation may succeed later and is safe to retry). Context
// cancellation and deadlines are returned as the context's error.
//
// # Concurrency
//
// Every ObjectStore is safe for concurrent use by many goroutines and holds
// no goroutines of its own between calls. Concurrent Puts of one key are
// last-writer-wins, and a reader sees either the old or the new object, never
// a mix; a reader that has opened an object keeps reading the version it
// opened (localdir) or fails rather than mixing versions (S3 returns the
// bytes of one version per GET).
package objstore
