package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"time"
)

// Sentinel errors; implementations wrap them with the operation and key.
var (
	// ErrNotExist: the object does not exist.
	ErrNotExist = errors.New("objstore: object does not exist")
	// ErrInvalidKey: the key breaks the rules of ValidateKey.
	ErrInvalidKey = errors.New("objstore: invalid key")
	// ErrInvalidRange: a negative offset, n < -1, or an offset past the end.
	ErrInvalidRange = errors.New("objstore: invalid range")
	// ErrSizeMismatch: the body of a Put was shorter or longer than its size.
	ErrSizeMismatch = errors.New("objstore: body length does not match size")
	// ErrUnavailable: the store could not be reached, timed out or failed on
	// its side (5xx, throttling) after the backend's retries. The operation
	// had no effect or an effect a retry repeats safely; retrying later may
	// succeed, so callers report it as a retriable condition.
	ErrUnavailable = errors.New("objstore: store unavailable")
)

// Key length limits in bytes: MaxKeyLen is S3's limit on a whole key (a
// backend that adds its own prefix has less room), MaxSegmentLen the common
// file-name limit, so that every key is also a valid relative path.
const (
	MaxKeyLen     = 1024
	MaxSegmentLen = 255
)

// ObjectInfo describes one stored object.
type ObjectInfo struct {
	Key     string    // the key given to Put (without a backend's own prefix)
	Size    int64     // length in bytes
	ModTime time.Time // when this version was written, by the store's clock
}

// ObjectStore is the storage the cold tier writes sealed segments to and
// reads them back from. Implementations are safe for concurrent use; see the
// package doc for keys, errors and concurrency.
type ObjectStore interface {
	// Put stores exactly size bytes read from body under key, replacing any
	// object already there (last writer wins).
	//
	// Put is atomic: when it returns nil the whole object is durably stored
	// and visible to every later call; when it returns an error no partial
	// object is ever visible, and a previous object under key is either
	// untouched or, if the store cannot tell (ErrUnavailable after the
	// request was sent), replaced whole. Put is idempotent: repeating it
	// with the same bytes leaves the same object.
	//
	// If body yields fewer or more than size bytes, Put fails with
	// ErrSizeMismatch and stores nothing. A body that also implements
	// io.ReaderAt and io.Seeker (an *os.File, an *io.SectionReader) is read
	// from its current offset without buffering. Put does not close body.
	Put(ctx context.Context, key string, body io.Reader, size int64) error

	// GetRange returns a reader of n bytes of the object under key starting
	// at byte off; n = -1 reads to the end, and a range running past the end
	// is cut at the end. off may equal the object's size (an empty read);
	// off beyond the size, off < 0 or n < -1 fail with ErrInvalidRange. An
	// absent key fails with ErrNotExist, also when n is 0.
	//
	// The reader returns the bytes of the one version that was current when
	// GetRange was called; a failure while reading (ErrUnavailable for a
	// broken connection) is returned by Read. The caller must Close it.
	GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)

	// Head returns the size and modification time of the object under key,
	// or ErrNotExist.
	Head(ctx context.Context, key string) (ObjectInfo, error)

	// List yields every object whose key starts with prefix (a plain string
	// prefix, not necessarily ending in '/'; "" lists everything) in
	// ascending byte-wise lexical order of keys. An object put or deleted
	// during the listing may or may not appear; every other one appears
	// exactly once. On failure List yields one non-nil error and stops. The
	// caller may stop early by breaking out of the loop.
	List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error]

	// Delete removes the object under key. Deleting an absent key is not an
	// error, so Delete is idempotent and safe to repeat after a failure or
	// crash. When it returns nil the object is gone for every later call.
	Delete(ctx context.Context, key string) error
}

// PutFile stores the file at path under key with s.Put, streaming it
// without buffering the whole file (an S3 store uploads its parts straight
// from the file). The file must not change while it is being stored.
func PutFile(ctx context.Context, s ObjectStore, key, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("objstore: put file %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("objstore: put file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("objstore: put file %s: not a regular file", path)
	}
	if err := s.Put(ctx, key, io.NewSectionReader(f, 0, st.Size()), st.Size()); err != nil {
		return fmt.Errorf("objstore: put file %s: %w", path, err)
	}
	return nil
}
