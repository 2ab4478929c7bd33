package segment

import (
	"container/list"
	"os"
	"sync"
)

// FileCache bounds the open .log files of the sealed, flushed segments of
// every log that shares it (a broker shares one). Such a segment's file
// opens when it is first read and stays open, least recently used first
// out, until the cache needs its slot; an active or unflushed segment
// keeps its file open outside the cache. Evicting a file drops only the
// cache's reference: a Slice being written keeps the descriptor open until
// it is released. So the descriptors a broker holds for its logs are the
// active segments', the cache's and those of Slices in flight.
//
// A FileCache is safe for concurrent use. Its mutex guards the list and
// every segment's slot in it; it is taken after a segment's own lock,
// never before, and no file is opened while it is held.
type FileCache struct {
	max int

	mu  sync.Mutex
	lru list.List // *cacheSlot, most recently used first
}

// cacheSlot is a segment's place in a FileCache: its open file, when the
// cache holds one. FileCache.mu guards both fields.
type cacheSlot struct {
	ref  *fileRef      // the cache's reference; nil when not open
	elem *list.Element // in FileCache.lru while ref is set
}

// NewFileCache returns a cache that keeps at most n files open (at least
// one).
func NewFileCache(n int) *FileCache {
	return &FileCache{max: max(n, 1)}
}

// Max is the most files the cache keeps open.
func (c *FileCache) Max() int { return c.max }

// Len is the number of files the cache holds open now.
func (c *FileCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// acquire returns the slot's file with a reference for the caller,
// opening path read-only when the cache does not hold it.
func (c *FileCache) acquire(slot *cacheSlot, path string) (*fileRef, error) {
	c.mu.Lock()
	if r := slot.ref; r != nil && r.acquire() {
		c.lru.MoveToFront(slot.elem)
		c.mu.Unlock()
		return r, nil
	}
	c.mu.Unlock()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r := newFileRef(f, false)
	r.acquire() // the caller's; the first is the cache's
	if kept := c.put(slot, r); kept != r {
		// Another reader opened it meanwhile: use that one.
		_ = r.release()
		_ = r.release()
		return kept, nil
	}
	return r, nil
}

// put makes r (holding a reference for the cache) the slot's file, unless
// the slot has one already; that one is returned with a reference for the
// caller. Files beyond the bound are evicted.
func (c *FileCache) put(slot *cacheSlot, r *fileRef) *fileRef {
	c.mu.Lock()
	if old := slot.ref; old != nil && old.acquire() {
		c.lru.MoveToFront(slot.elem)
		c.mu.Unlock()
		return old
	}
	slot.ref, slot.elem = r, c.lru.PushFront(slot)
	var evicted []*fileRef
	for c.lru.Len() > c.max {
		victim := c.lru.Remove(c.lru.Back()).(*cacheSlot)
		evicted = append(evicted, victim.ref)
		victim.ref, victim.elem = nil, nil
	}
	c.mu.Unlock()
	for _, v := range evicted {
		_ = v.release()
	}
	return r
}

// adopt hands r, with the reference its segment held, to the cache (the
// segment was sealed and flushed).
func (c *FileCache) adopt(slot *cacheSlot, r *fileRef) {
	if kept := c.put(slot, r); kept != r {
		_ = kept.release()
		_ = r.release()
	}
}

// take removes the slot's file from the cache and returns it with the
// cache's reference, or nil when it holds none.
func (c *FileCache) take(slot *cacheSlot) *fileRef {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := slot.ref
	if r != nil {
		c.lru.Remove(slot.elem)
		slot.ref, slot.elem = nil, nil
	}
	return r
}

// drop removes the slot's file from the cache and releases the cache's
// reference (the segment is closed).
func (c *FileCache) drop(slot *cacheSlot) error {
	if r := c.take(slot); r != nil {
		return r.release()
	}
	return nil
}
