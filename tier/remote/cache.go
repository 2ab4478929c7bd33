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
// breaks an fd already handed out.
type chunkCache struct {
	dir string
	max int64

	mu       sync.Mutex
	lru      *list.List               // of *chunkEntry, most recent first
	entries  map[string]*list.Element // key → element of lru
	inflight map[string]chan struct{} // key → closed when its fill ends
	used     int64
	seq      int
}

type chunkEntry struct {
	key, path string
	size      int64
}

func newChunkCache(dir string, maxBytes int64) (*chunkCache, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("remote: clear chunk cache %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("remote: create chunk cache %s: %w", dir, err)
	}
	return &chunkCache{dir: dir, max: maxBytes, lru: list.New(), entries: map[string]*list.Element{}, inflight: map[string]chan struct{}{}}, nil
}

// open returns the chunk key opened for reading, filling it with fill
// (which writes the chunk to the given path) when absent. Concurrent
// opens of one key share a single fill.
func (c *chunkCache) open(ctx context.Context, key string, fill func(path string) (int64, error)) (*os.File, error) {
	for attempt := 0; attempt < 3; attempt++ {
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
		if ch, ok := c.inflight[key]; ok {
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		ch := make(chan struct{})
		c.inflight[key] = ch
		c.seq++
		tmp := filepath.Join(c.dir, fmt.Sprintf("fill-%d.tmp", c.seq))
		c.mu.Unlock()

		size, err := fill(tmp)
		c.mu.Lock()
		delete(c.inflight, key)
		close(ch)
		if err != nil {
			c.mu.Unlock()
			os.Remove(tmp)
			return nil, err
		}
		path := filepath.Join(c.dir, key)
		if err := os.Rename(tmp, path); err != nil {
			c.mu.Unlock()
			os.Remove(tmp)
			return nil, fmt.Errorf("remote: cache chunk: %w", err)
		}
		c.entries[key] = c.lru.PushFront(&chunkEntry{key: key, path: path, size: size})
		c.used += size
		c.evictLocked()
		f, err := os.Open(path)
		c.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("remote: open cached chunk: %w", err)
		}
		return f, nil
	}
	return nil, fmt.Errorf("remote: chunk %s: evicted repeatedly while filling", key)
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
