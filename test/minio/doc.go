// Package minio starts a real MinIO server for tests: the S3 side of
// Strata's tiered storage is tested against the real thing, not a fake.
//
// Start(t) runs the binary that scripts/install-minio.sh (`make deps`)
// installs into $(go env GOPATH)/bin/minio on a free loopback port, with a
// temporary data directory and random root credentials, waits until its
// health endpoint answers (bounded, no fixed sleeps), creates a bucket with
// minio-go and returns the endpoint, credentials, bucket and a minio-go
// client for checking independently what the code under test wrote. A
// missing binary fails the test with a hint to run `make deps`; it is never
// skipped silently. Stop and Restart simulate an outage of the store.
//
// # Concurrency
//
// A Server's methods may be called from any goroutine; mu serializes Stop,
// Restart and Close, which own the child process. Each started process has
// one goroutine that waits for it to exit and then closes its exited
// channel. On Linux the child gets SIGKILL if the test process dies first.
package minio
