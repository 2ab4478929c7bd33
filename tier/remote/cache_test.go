package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
)

// chunkBytes is the content the test fills give key.
func chunkBytes(key string, n int) []byte {
	return bytes.Repeat([]byte(key[len(key)-1:]), n)
}

// countingFill fills chunks of n bytes, counting the fills.
func countingFill(key string, n int, fills *atomic.Int64) func([]byte) ([]byte, error) {
	return func(buf []byte) ([]byte, error) {
		fills.Add(1)
		return append(buf, chunkBytes(key, n)...), nil
	}
}

func readRef(t *testing.T, h chunkRef, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if got, err := h.ReadAt(b, 0); got != n || (err != nil && got != n) {
		t.Fatalf("read %d of %d bytes: %v", got, n, err)
	}
	return b
}

func diskFiles(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// testCache makes a chunk cache in dir, closed at the end of the test, and
// an open of a key that fills it with countingFill (counted in fills) and
// checks its bytes.
func testCache(t *testing.T, dir string, maxDisk, maxMem, size int64) (*chunkCache, func(key string) chunkRef, *atomic.Int64) {
	c, err := newChunkCache(dir, maxDisk, maxMem, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.close() })
	fills := new(atomic.Int64)
	open := func(key string) chunkRef {
		t.Helper()
		h, err := c.open(context.Background(), key, countingFill(key, int(size), fills))
		if err != nil {
			t.Fatal(err)
		}
		if got := readRef(t, h, int(size)); !bytes.Equal(got, chunkBytes(key, int(size))) {
			t.Fatalf("chunk %s holds %q", key, got[:8])
		}
		return h
	}
	return c, open, fills
}

// TestChunkCacheStreamingStaysInMemory: chunks read once are served from
// memory and never written to disk; a chunk read again after it left
// memory (a ghost) is refilled and written to disk, and then served from
// there once memory dropped it again.
func TestChunkCacheStreamingStaysInMemory(t *testing.T) {
	const size = 100
	dir := t.TempDir()
	c, open, fills := testCache(t, dir, 10*size, 2*size, size)
	for i := range 6 { // a stream: each chunk once
		open(fmt.Sprintf("c%d", i)).release()
	}
	if mem, disk := c.usedBytes(); mem > 2*size || disk != 0 || diskFiles(t, dir) != 0 {
		t.Fatalf("after a stream: %d bytes in memory, %d on disk, %d files", mem, disk, diskFiles(t, dir))
	}
	open("c5").release() // still in memory
	if fills.Load() != 6 {
		t.Fatalf("%d fills, want 6", fills.Load())
	}
	h := open("c0") // a ghost: refilled and written to disk
	if fills.Load() != 7 || h.m == nil {
		t.Fatalf("%d fills (want 7), served from memory %v", fills.Load(), h.m != nil)
	}
	h.release()
	if _, disk := c.usedBytes(); disk != size || diskFiles(t, dir) != 1 {
		t.Fatalf("after a ghost's refill: %d bytes on disk, %d files", disk, diskFiles(t, dir))
	}
	open("c1").release()
	open("c2").release() // c0 leaves memory
	h = open("c0")
	if fills.Load() != 9 || h.f == nil {
		t.Fatalf("%d fills (want 9), served from disk %v", fills.Load(), h.f != nil)
	}
	h.release()
}

// TestChunkCacheReusesBuffers: a chunk's buffer goes back to the cache
// once memory dropped it and the last reference is released, and a later
// fill reads into it; a reference held across eviction keeps its bytes.
func TestChunkCacheReusesBuffers(t *testing.T) {
	const size = 64
	c, err := newChunkCache(t.TempDir(), 10*size, size, size)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	ctx := context.Background()
	var fills atomic.Int64
	held, err := c.open(ctx, "a", countingFill("a", size, &fills))
	if err != nil {
		t.Fatal(err)
	}
	first := &held.m.buf[:1][0]
	h, err := c.open(ctx, "b", countingFill("b", size, &fills)) // evicts a from memory
	if err != nil {
		t.Fatal(err)
	}
	h.release()
	if got := readRef(t, held, size); !bytes.Equal(got, chunkBytes("a", size)) {
		t.Fatal("a held reference lost its bytes to eviction")
	}
	held.release() // a's buffer is free now
	var reused bool
	h, err = c.open(ctx, "c", func(buf []byte) ([]byte, error) {
		reused = cap(buf) > 0 && &buf[:1][0] == first
		return append(buf, chunkBytes("c", size)...), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h.release()
	if !reused {
		t.Fatal("the fill did not get the freed buffer")
	}
}

// TestChunkCacheDropBehind: with room for many chunks, a reader that
// passes each chunk before the next fill cycles through the buffers it
// has instead of growing the memory tier; a passed chunk read again
// before it is recycled stays, and one read after is a ghost (its refill
// goes to disk).
func TestChunkCacheDropBehind(t *testing.T) {
	const size = 64
	dir := t.TempDir()
	c, open, fills := testCache(t, dir, 100*size, 100*size, size)
	bufs := map[*byte]bool{}
	for i := range 20 { // a stream: read chunk i, pass chunk i-1
		if i > 0 {
			c.pass(fmt.Sprintf("c%d", i-1))
		}
		h := open(fmt.Sprintf("c%d", i))
		bufs[&h.m.buf[:1][0]] = true
		h.release()
	}
	if mem, _ := c.usedBytes(); mem > 2*size || len(bufs) > 2 {
		t.Fatalf("a stream of 20 chunks holds %d bytes in memory in %d distinct buffers, want at most 2", mem, len(bufs))
	}
	c.pass("c19")
	open("c19").release() // read again before recycling: kept, and no longer passed
	open("c20").release()
	open("c19").release()
	if fills.Load() != 21 {
		t.Fatalf("%d fills, want 21 (c19 kept)", fills.Load())
	}
	open("c3").release() // recycled earlier: a ghost, refilled and written to disk
	if _, disk := c.usedBytes(); fills.Load() != 22 || disk != size || diskFiles(t, dir) != 1 {
		t.Fatalf("after reading a recycled chunk again: %d fills (want 22), %d bytes on disk", fills.Load(), disk)
	}
}

// TestChunkCacheSharedFill: concurrent opens of one key share one fill,
// and a failed fill is retried.
func TestChunkCacheSharedFill(t *testing.T) {
	const size = 32
	c, err := newChunkCache(t.TempDir(), 10*size, 4*size, size)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	var fills atomic.Int64
	started, release := make(chan struct{}), make(chan struct{})
	fill := func(buf []byte) ([]byte, error) {
		if fills.Add(1) == 1 {
			close(started)
			<-release
			return nil, errors.New("injected fill failure")
		}
		return append(buf, chunkBytes("k", size)...), nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			h, err := c.open(context.Background(), "k", fill)
			if err != nil {
				errs <- err
				return
			}
			defer h.release()
			b := make([]byte, size)
			if _, err := h.ReadAt(b, 0); err != nil || !bytes.Equal(b, chunkBytes("k", size)) {
				errs <- fmt.Errorf("read %q: %v", b, err)
			}
		})
	}
	<-started
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := fills.Load(); n != 2 {
		t.Fatalf("%d fills for 8 opens of one key, want 2 (one failed)", n)
	}
}
