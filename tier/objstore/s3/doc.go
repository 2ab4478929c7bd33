// Package s3 is the objstore.ObjectStore of S3-compatible object storage
// (AWS S3, MinIO) on github.com/aws/aws-sdk-go-v2: the production backend of
// the tier (remote.log.storage.backend=s3).
//
// Options select the bucket, a key prefix, a custom endpoint URL and
// path-style addressing (for MinIO), the region, and either static keys or
// the SDK's default credential chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_PROFILE and shared files, web identity, instance
// roles).
//
// # Mapping to S3
//
// An object key k is stored as Prefix + k, with a '/' added after a prefix
// that lacks one; List strips the prefix again. Put goes through the SDK's
// upload manager: a body of up to PartSize bytes is one PutObject, a larger
// one a multipart upload whose parts go up Concurrency at a time and which
// is aborted on failure, so S3's own atomicity (an object appears only when
// PutObject or CompleteMultipartUpload succeeds) gives the interface's. A
// seekable body (objstore.PutFile) is uploaded straight from the file; a
// stream is buffered one part per concurrent upload. GetRange is a GET with
// a Range header; an answer of 416 is resolved with a HEAD, since S3 refuses
// empty ranges (off = size) that the interface allows. Delete is
// DeleteObject, which S3 already treats as idempotent.
//
// # Errors and retries
//
// Every request is retried by the SDK's standard retryer (MaxAttempts,
// exponential backoff with jitter capped at MaxBackoff, no client-side retry
// quota) on connection errors, timeouts, throttling and 5xx answers. When
// those retries are spent such errors are returned wrapping
// objstore.ErrUnavailable, as are failures while streaming a GET body.
// NoSuchKey and 404 map to objstore.ErrNotExist.
//
// # Concurrency
//
// A Store is immutable after New and safe for concurrent use; the SDK client
// pools HTTP connections. The only goroutines are the upload manager's part
// uploaders, which live for one Put.
package s3
