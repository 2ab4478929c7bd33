package objstoretest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/strata-broker/strata/tier/objstore"
)

// s3MinPart is S3's minimum multipart part size; ranges around it straddle
// the first part boundary of a multipart upload with minimum-size parts.
const s3MinPart = 5 << 20

func testLarge(t *testing.T, s objstore.ObjectStore, size int64) {
	ctx := t.Context()
	data := pseudoRandom(42, int(size))
	want := sha256.Sum256(data)
	// A plain stream (buffered by a multipart uploader) and a seekable body
	// (read part by part in place) take different paths.
	if err := s.Put(ctx, "big/stream", onlyReader{bytes.NewReader(data)}, size); err != nil {
		t.Fatalf("Put stream of %d bytes: %v", size, err)
	}
	if err := s.Put(ctx, "big/seekable", bytes.NewReader(data), size); err != nil {
		t.Fatalf("Put seekable of %d bytes: %v", size, err)
	}
	ranges := [][2]int64{{size/2 - 1000, 200_000}, {size - 10, -1}}
	if size > s3MinPart+10 {
		ranges = append(ranges, [2]int64{s3MinPart - 10, 20})
	}
	for _, key := range []string{"big/stream", "big/seekable"} {
		rc, err := s.GetRange(ctx, key, 0, -1)
		if err != nil {
			t.Fatalf("GetRange(%q): %v", key, err)
		}
		h := sha256.New()
		n, err := io.Copy(h, rc)
		rc.Close()
		if err != nil || n != size || !bytes.Equal(h.Sum(nil), want[:]) {
			t.Fatalf("GetRange(%q) read %d bytes (err %v), want %d with the same hash", key, n, err, size)
		}
		for _, r := range ranges {
			off, n := max(r[0], 0), r[1]
			end := size
			if n >= 0 {
				end = min(off+n, size)
			}
			if got := mustGet(t, s, key, off, n); !bytes.Equal(got, data[off:end]) {
				t.Fatalf("GetRange(%q, %d, %d) returned %d bytes that differ from the %d put", key, off, n, len(got), end-off)
			}
		}
	}
}

// testConcurrent runs writers of distinct keys, writers overwriting one
// shared key, and readers of the shared key at once; every read of the
// shared key must be one whole version.
func testConcurrent(t *testing.T, s objstore.ObjectStore) {
	ctx := t.Context()
	const (
		writers    = 4
		keysEach   = 4
		overwrites = 8
		readers    = 4
		reads      = 16
	)
	version := func(v int) []byte { return bytes.Repeat([]byte{byte(v)}, 1000+37*v) }
	mustPut(t, s, "cc/shared", version(0))
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range keysEach {
				key := fmt.Sprintf("cc/w%d/%d", w, i)
				data := pseudoRandom(uint64(w*100+i), 3000+i)
				if err := s.Put(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
					t.Errorf("Put(%q): %v", key, err)
					return
				}
				if got, err := get(ctx, s, key, 0, -1); err != nil || !bytes.Equal(got, data) {
					t.Errorf("GetRange(%q) after Put: %d bytes, %v", key, len(got), err)
				}
			}
		})
		wg.Go(func() {
			for i := range overwrites {
				v := 1 + w*overwrites + i
				if err := s.Put(ctx, "cc/shared", onlyReader{bytes.NewReader(version(v))}, int64(len(version(v)))); err != nil {
					t.Errorf("Put(cc/shared) version %d: %v", v, err)
					return
				}
			}
		})
	}
	for range readers {
		wg.Go(func() {
			for range reads {
				got, err := get(ctx, s, "cc/shared", 0, -1)
				if err != nil {
					t.Errorf("GetRange(cc/shared): %v", err)
					return
				}
				if len(got) == 0 || !bytes.Equal(got, version(int(got[0]))) {
					t.Errorf("GetRange(cc/shared) returned %d bytes that are no whole version", len(got))
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	keys := listKeys(t, s, "cc/")
	if len(keys) != writers*keysEach+1 {
		t.Fatalf("List(cc/) after concurrent puts = %d keys, want %d: %q", len(keys), writers*keysEach+1, keys)
	}
}

// get reads a whole range.
func get(ctx context.Context, s objstore.ObjectStore, key string, off, n int64) ([]byte, error) {
	rc, err := s.GetRange(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", key, err)
	}
	return b, nil
}

func mustGet(t *testing.T, s objstore.ObjectStore, key string, off, n int64) []byte {
	t.Helper()
	b, err := get(t.Context(), s, key, off, n)
	if err != nil {
		t.Fatalf("GetRange(%q, %d, %d): %v", key, off, n, err)
	}
	return b
}

func mustPut(t *testing.T, s objstore.ObjectStore, key string, data []byte) {
	t.Helper()
	if err := s.Put(t.Context(), key, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
}

func listKeys(t *testing.T, s objstore.ObjectStore, prefix string) []string {
	t.Helper()
	var keys []string
	for obj, err := range s.List(t.Context(), prefix) {
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		keys = append(keys, obj.Key)
	}
	return keys
}

// pseudoRandom returns n deterministic bytes for seed.
func pseudoRandom(seed uint64, n int) []byte {
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b) // never fails
	return b
}

// onlyReader hides every method but Read, so a body looks like a stream.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// failingReader fails every read with errInjected.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errInjected }

// cancelingReader cancels a context when it is read, then keeps yielding
// zeros, so only the context can make the Put fail.
type cancelingReader struct{ cancel context.CancelFunc }

func (c cancelingReader) Read(p []byte) (int, error) {
	c.cancel()
	clear(p)
	return len(p), nil
}
