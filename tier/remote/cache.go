package remote

import (
	"container/list"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// chunkCache is the bounded on-disk cache of object chunks. Entries are
// files named by key; the LRU list, the byte count and in-flight fills are
// guarded by mu. Files are opened under mu, so eviction (unlink) never
// breaks an fd already handed out: a fill opens the chunk for every
// goroutine waiting on it before anything can evict it.
type chunkCache struct {
	dir string
	max int64

	mu       sync.Mutex
	lru      *list.List               // of *chunkEntry, most recent first
	entries  map[string]*list.Element // key → element of lru
	inflight map[string]*chunkFill    // key → the fill under way
	used     int64
	seq      int
}

type chunkEntry struct {
	key, path string
	size      int64
}

// chunkFill is one in-flight fill and the goroutines waiting on it.
type chunkFill struct {
	done    chan struct{} // closed when the fill ended
	waiters int           // guarded by chunkCache.mu until done closes
	files   chan *os.File // after a good fill: one fd per waiter (nil: retry)
}

func newChunkCache(dir string, maxBytes int64) (*chunkCache, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("remote: clear chunk cache %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("remote: create chunk cache %s: %w", dir, err)
	}
	return &chunkCache{dir: dir, max: maxBytes, lru: list.New(), entries: map[string]*list.Element{}, inflight: map[string]*chunkFill{}}, nil
}

// fillAttempts bounds how often open starts over after fills that failed
// (each waiter may become the filler next time).
const fillAttempts = 3

// open returns the chunk key opened for reading, filling it with fill
// (which writes the chunk to the given path) when absent. Concurrent
// opens of one key share a single fill and its result.
func (c *chunkCache) open(ctx context.Context, key string, fill func(path string) (int64, error)) (*os.File, error) {
	var lastErr error
	for range fillAttempts {
		c.mu.Lock()
		if el, ok := c.entries[key]; ok {
			c.lru.MoveToFront(el)
			f, err := os.Open(el.Value.(*chunkEntry).path)
			c.mu.Unlock()
			if err != nil {
				return nil, fmt.Errorf("remote: open cached chunk: %w", err)
			}
			return f, nil
		}
		if fl, ok := c.inflight[key]; ok {
			fl.waiters++
			c.mu.Unlock()
			f, err := c.await(ctx, fl)
			if err != nil {
				return nil, err
			}
			if f != nil {
				return f, nil
			}
			continue // the fill failed: try again
		}
		f, err := c.fill(key, fill)
		if err == nil {
			return f, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("remote: chunk %s: %w", key, lastErr)
}

// await waits for fl and takes the fd it opened for this waiter; nil
// without an error when the fill failed.
func (c *chunkCache) await(ctx context.Context, fl *chunkFill) (*os.File, error) {
	select {
	case <-fl.done:
		return <-fl.files, nil
	case <-ctx.Done():
		c.mu.Lock()
		select {
		case <-fl.done: // ended meanwhile: our fd is there, close it
			c.mu.Unlock()
			if f := <-fl.files; f != nil {
				f.Close()
			}
		default:
			fl.waiters--
			c.mu.Unlock()
		}
		return nil, ctx.Err()
	}
}

// fill runs one fill of key, caches the chunk and opens it for the caller
// and for every waiter.
func (c *chunkCache) fill(key string, fill func(path string) (int64, error)) (*os.File, error) {
	fl := &chunkFill{done: make(chan struct{})}
	c.inflight[key] = fl
	c.seq++
	tmp := filepath.Join(c.dir, fmt.Sprintf("fill-%d.tmp", c.seq))
	c.mu.Unlock()

	size, err := fill(tmp)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.inflight, key)
	fl.files = make(chan *os.File, fl.waiters)
	defer close(fl.done)
	path := filepath.Join(c.dir, key)
	if err == nil {
		if err = os.Rename(tmp, path); err != nil {
			err = fmt.Errorf("remote: cache chunk: %w", err)
		}
	}
	if err != nil {
		os.Remove(tmp)
		for range fl.waiters {
			fl.files <- nil
		}
		return nil, err
	}
	c.entries[key] = c.lru.PushFront(&chunkEntry{key: key, path: path, size: size})
	c.used += size
	c.evictLocked() // keeps the newest entry, this one
	for range fl.waiters {
		f, _ := os.Open(path) // nil on failure: that waiter tries again
		fl.files <- f
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("remote: open cached chunk: %w", err)
	}
	return f, nil
}

// evictLocked drops least recently used chunks beyond the bound, always
// keeping the newest. Caller holds mu.
func (c *chunkCache) evictLocked() {
	for c.used > c.max && c.lru.Len() > 1 {
		el := c.lru.Back()
		e := el.Value.(*chunkEntry)
		c.lru.Remove(el)
		delete(c.entries, e.key)
		c.used -= e.size
		os.Remove(e.path)
	}
}

// present reports whether key is cached or being filled.
func (c *chunkCache) present(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, cached := c.entries[key]
	_, filling := c.inflight[key]
	return cached || filling
}

// usedBytes is the cache's current size.
func (c *chunkCache) usedBytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

func (c *chunkCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Init()
	c.entries = map[string]*list.Element{}
	c.used = 0
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("remote: remove chunk cache: %w", err)
	}
	return nil
}
