package remote

import (
	"container/list"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// chunkCache holds chunks of remote .log objects in two tiers. Every fill
// lands in memory, a bounded LRU of buffers that reads are served from
// with write(2). A chunk also goes to disk, a bounded LRU of files in dir
// served with sendfile, only when it is filled again after it left memory
// (its key is then a "ghost"): a consumer streaming through the tier reads
// each chunk once, so it costs no page-cache writes (on this project's
// VMs a fresh page-cache page costs several times the copy into it),
// while a range read repeatedly ends up on disk, bounded by
// remote.log.reader.cache.bytes. A chunk a sequential reader moved past
// is recycled before the memory tier grows (see pass). Fills under way hold buffers beyond the
// memory bound: at most one read-ahead window per reader slot
// (remote.log.reader.threads).
//
// Concurrency: mu guards both LRUs, the ghosts, the free buffers, the
// in-flight fills and every memChunk's refs. Files are opened under mu,
// so eviction (unlink) never breaks an fd already handed out, and a
// memory chunk's buffer is reused only once its last reference is gone.
// A fill hands a reference to every goroutine waiting on it before
// anything can evict it.
type chunkCache struct {
	dir       string
	maxDisk   int64
	maxMem    int64
	chunkSize int64 // the size of reusable buffers

	mu       sync.Mutex
	lru      *list.List               // disk: of *chunkEntry, most recent first
	entries  map[string]*list.Element // disk: key → element of lru
	used     int64                    // disk bytes
	mem      *list.List               // of *memChunk, most recent first
	memKeys  map[string]*list.Element // key → element of mem
	memUsed  int64
	ghosts   map[string]bool // keys that left memory without a disk copy
	ghostQ   []string        // ghosts oldest first, bounding them
	free     [][]byte        // chunkSize buffers for the next fills
	inflight map[string]*chunkFill
	seq      int
}

type chunkEntry struct {
	key, path string
	size      int64
}

// memChunk is one chunk in memory.
type memChunk struct {
	key    string
	buf    []byte
	refs   int  // the mem LRU while listed, plus every chunkRef; guarded by chunkCache.mu
	passed bool // a sequential reader moved past it and nobody read it since; guarded by chunkCache.mu
}

// chunkRef is an open chunk, in memory (m) or a disk-cache file (f); the
// zero chunkRef is none. Release it once.
type chunkRef struct {
	c *chunkCache
	m *memChunk
	f *os.File
}

func (h chunkRef) ok() bool { return h.m != nil || h.f != nil }

// ReadAt reads from the chunk as os.File.ReadAt does.
func (h chunkRef) ReadAt(b []byte, off int64) (int, error) {
	if h.f != nil {
		return h.f.ReadAt(b, off)
	}
	if off >= int64(len(h.m.buf)) {
		return 0, io.EOF
	}
	n := copy(b, h.m.buf[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func (h chunkRef) release() {
	switch {
	case h.m != nil:
		h.c.mu.Lock()
		h.c.unrefLocked(h.m)
		h.c.mu.Unlock()
	case h.f != nil:
		h.f.Close()
	}
}

// chunkFill is one in-flight fill and the goroutines waiting on it.
type chunkFill struct {
	done    chan struct{} // closed when the fill ended
	waiters int           // guarded by chunkCache.mu until done closes
	refs    chan chunkRef // after a good fill: one per waiter (zero: retry)
}

// Bounds of the memory tier's bookkeeping.
const (
	maxFreeBuffers = 8  // reusable buffers kept
	ghostsPerChunk = 4  // ghosts remembered per chunk the memory tier holds
	minGhosts      = 64 // ghosts remembered at least
)

func newChunkCache(dir string, maxDisk, maxMem, chunkSize int64) (*chunkCache, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("remote: clear chunk cache %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("remote: create chunk cache %s: %w", dir, err)
	}
	return &chunkCache{dir: dir, maxDisk: maxDisk, maxMem: maxMem, chunkSize: chunkSize,
		lru: list.New(), entries: map[string]*list.Element{}, mem: list.New(), memKeys: map[string]*list.Element{},
		ghosts: map[string]bool{}, inflight: map[string]*chunkFill{}}, nil
}

// fillAttempts bounds how often open starts over after fills that failed
// (each waiter may become the filler next time).
const fillAttempts = 3

// open returns chunk key, filling it with fill when absent: fill returns
// the chunk's bytes, read into buf (empty, with room for a chunk) when
// they fit. Concurrent opens of one key share a single fill and its
// result.
func (c *chunkCache) open(ctx context.Context, key string, fill func(buf []byte) ([]byte, error)) (chunkRef, error) {
	var lastErr error
	for range fillAttempts {
		c.mu.Lock()
		if el, ok := c.memKeys[key]; ok {
			c.mem.MoveToFront(el)
			m := el.Value.(*memChunk)
			m.refs++
			m.passed = false
			c.mu.Unlock()
			return chunkRef{c: c, m: m}, nil
		}
		if el, ok := c.entries[key]; ok {
			c.lru.MoveToFront(el)
			f, err := os.Open(el.Value.(*chunkEntry).path)
			c.mu.Unlock()
			if err != nil {
				return chunkRef{}, fmt.Errorf("remote: open cached chunk: %w", err)
			}
			return chunkRef{c: c, f: f}, nil
		}
		if fl, ok := c.inflight[key]; ok {
			fl.waiters++
			c.mu.Unlock()
			h, err := c.await(ctx, fl)
			if err != nil {
				return chunkRef{}, err
			}
			if h.ok() {
				return h, nil
			}
			continue // the fill failed: try again
		}
		h, err := c.fill(key, fill)
		if err == nil {
			return h, nil
		}
		lastErr = err
	}
	return chunkRef{}, fmt.Errorf("remote: chunk %s: %w", key, lastErr)
}

// await waits for fl and takes the reference it made for this waiter; the
// zero chunkRef without an error when the fill failed.
func (c *chunkCache) await(ctx context.Context, fl *chunkFill) (chunkRef, error) {
	select {
	case <-fl.done:
		return <-fl.refs, nil
	case <-ctx.Done():
		c.mu.Lock()
		select {
		case <-fl.done: // ended meanwhile: our reference is there, drop it
			c.mu.Unlock()
			(<-fl.refs).release()
		default:
			fl.waiters--
			c.mu.Unlock()
		}
		return chunkRef{}, ctx.Err()
	}
}

// fill runs one fill of key (called with mu held; returns with it
// released): see finish.
func (c *chunkCache) fill(key string, fill func([]byte) ([]byte, error)) (chunkRef, error) {
	r := c.reserveLocked(key)
	c.mu.Unlock()
	data, err := fill(r.buf[:0])
	return c.finish(r, data, err)
}

// reservation is a fill of one chunk under way: registered as in flight,
// so that opens of its key wait for it, with a buffer to read into.
type reservation struct {
	key   string
	fl    *chunkFill
	buf   []byte // empty, with room for a chunk
	admit bool   // a ghost: write it to disk too
	tmp   string // where the disk copy is written first
}

// reserve registers fills of keys, in order, up to the first that is
// cached or being filled; the caller fills each and ends it with finish.
func (c *chunkCache) reserve(keys []string) []*reservation {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rs []*reservation
	for _, key := range keys {
		if c.presentLocked(key) {
			break
		}
		rs = append(rs, c.reserveLocked(key))
	}
	return rs
}

// reserveLocked registers a fill of key. Caller holds mu and checked that
// key is neither cached nor being filled.
func (c *chunkCache) reserveLocked(key string) *reservation {
	r := &reservation{key: key, fl: &chunkFill{done: make(chan struct{})}, admit: c.ghosts[key]}
	c.inflight[key] = r.fl
	c.recyclePassedLocked()
	if n := len(c.free); n > 0 {
		r.buf, c.free = c.free[n-1], c.free[:n-1]
	} else {
		r.buf = make([]byte, 0, c.chunkSize)
	}
	c.seq++
	r.tmp = filepath.Join(c.dir, fmt.Sprintf("fill-%d.tmp", c.seq))
	return r
}

// finish ends r's fill with its bytes (data, read into r.buf when they
// fit) or err: it keeps the chunk in memory, on disk too when the key is
// a ghost, and makes a reference for the caller and for every waiter
// (the caller releases its own).
func (c *chunkCache) finish(r *reservation, data []byte, err error) (chunkRef, error) {
	path := ""
	if err == nil && r.admit {
		path = filepath.Join(c.dir, r.key)
		if werr := writeChunkFile(r.tmp, path, data); werr != nil {
			path = "" // the disk copy is an optimisation: serve from memory
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fl := r.fl
	delete(c.inflight, r.key)
	fl.refs = make(chan chunkRef, fl.waiters)
	defer close(fl.done)
	if err != nil {
		c.putBufLocked(r.buf)
		for range fl.waiters {
			fl.refs <- chunkRef{}
		}
		return chunkRef{}, err
	}
	if !sameArray(data, r.buf) {
		c.putBufLocked(r.buf) // the fill did not use it
	}
	m := &memChunk{key: r.key, buf: data, refs: 2 + fl.waiters} // the LRU, the caller, the waiters
	c.memKeys[r.key] = c.mem.PushFront(m)
	c.memUsed += int64(len(data))
	if path != "" {
		delete(c.ghosts, r.key)
		c.entries[r.key] = c.lru.PushFront(&chunkEntry{key: r.key, path: path, size: int64(len(data))})
		c.used += int64(len(data))
		c.evictDiskLocked()
	}
	c.evictMemLocked() // keeps the newest chunk, this one
	for range fl.waiters {
		fl.refs <- chunkRef{c: c, m: m}
	}
	return chunkRef{c: c, m: m}, nil
}

// sameArray reports whether a and b share their backing array.
func sameArray(a, b []byte) bool {
	return cap(a) > 0 && cap(b) > 0 && &a[:cap(a)][cap(a)-1] == &b[:cap(b)][cap(b)-1]
}

// writeChunkFile writes data to tmp and renames it to path.
func writeChunkFile(tmp, path string, data []byte) error {
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("remote: write chunk file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("remote: cache chunk file: %w", err)
	}
	return nil
}

// unrefLocked drops one reference to m; the last one frees its buffer for
// reuse. Caller holds mu.
func (c *chunkCache) unrefLocked(m *memChunk) {
	m.refs--
	if m.refs == 0 {
		c.putBufLocked(m.buf)
		m.buf = nil
	}
}

// putBufLocked keeps b for a later fill when it is a chunk buffer and
// fewer than maxFreeBuffers are kept. Caller holds mu.
func (c *chunkCache) putBufLocked(b []byte) {
	if int64(cap(b)) == c.chunkSize && len(c.free) < maxFreeBuffers {
		c.free = append(c.free, b[:0])
	}
}

// evictMemLocked drops least recently used chunks from memory beyond the
// bound, always keeping the newest; a dropped chunk without a disk copy
// becomes a ghost, so that its next fill also writes it to disk. Caller
// holds mu.
func (c *chunkCache) evictMemLocked() {
	for c.memUsed > c.maxMem && c.mem.Len() > 1 {
		c.dropMemLocked(c.mem.Back())
	}
}

// pass marks chunk key, when in memory, as one a sequential reader moved
// past: it goes to the cold end of the LRU, and its buffer is taken for
// the next fill before a new one is allocated (drop-behind, as a kernel
// does for a file read once through). A consumer streaming through the
// tier so cycles through a few warm buffers instead of filling the whole
// memory tier with chunks it will not read again; fresh memory is costly
// (on this project's VMs a first touch costs several times a copy). A
// read of the chunk before it is recycled keeps it, and a read after
// finds a ghost, which the disk tier then takes.
func (c *chunkCache) pass(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.memKeys[key]; ok {
		el.Value.(*memChunk).passed = true
		c.mem.MoveToBack(el)
	}
}

// recyclePassedLocked drops passed chunks from the cold end of the LRU
// until a buffer is free for reuse (the last reference to a dropped chunk
// frees its buffer) or none is left to drop. Caller holds mu.
func (c *chunkCache) recyclePassedLocked() {
	for len(c.free) == 0 && c.mem.Len() > 0 {
		el := c.mem.Back()
		if !el.Value.(*memChunk).passed {
			return
		}
		c.dropMemLocked(el)
	}
}

// dropMemLocked takes a chunk out of the memory tier; one without a disk
// copy becomes a ghost, so that its next fill also writes it to disk.
// Caller holds mu.
func (c *chunkCache) dropMemLocked(el *list.Element) {
	m := el.Value.(*memChunk)
	c.mem.Remove(el)
	delete(c.memKeys, m.key)
	c.memUsed -= int64(len(m.buf))
	if _, onDisk := c.entries[m.key]; !onDisk {
		c.addGhostLocked(m.key)
	}
	c.unrefLocked(m)
}

// addGhostLocked remembers key as a ghost, forgetting the oldest beyond
// the bound. Caller holds mu.
func (c *chunkCache) addGhostLocked(key string) {
	c.ghosts[key] = true
	c.ghostQ = append(c.ghostQ, key)
	limit := max(minGhosts, ghostsPerChunk*int(c.maxMem/max(c.chunkSize, 1)))
	for len(c.ghostQ) > limit {
		delete(c.ghosts, c.ghostQ[0])
		c.ghostQ = c.ghostQ[1:]
	}
}

// evictDiskLocked drops least recently used files beyond the bound,
// always keeping the newest. Caller holds mu.
func (c *chunkCache) evictDiskLocked() {
	for c.used > c.maxDisk && c.lru.Len() > 1 {
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
	return c.presentLocked(key)
}

// presentLocked is present for a caller holding mu.
func (c *chunkCache) presentLocked(key string) bool {
	_, inMem := c.memKeys[key]
	_, onDisk := c.entries[key]
	_, filling := c.inflight[key]
	return inMem || onDisk || filling
}

// usedBytes is the bytes the cache holds in memory and on disk.
func (c *chunkCache) usedBytes() (mem, disk int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.memUsed, c.used
}

func (c *chunkCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Init()
	c.entries = map[string]*list.Element{}
	c.used = 0
	for el := c.mem.Front(); el != nil; el = el.Next() {
		c.unrefLocked(el.Value.(*memChunk))
	}
	c.mem.Init()
	c.memKeys = map[string]*list.Element{}
	c.memUsed = 0
	c.free = nil
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("remote: remove chunk cache: %w", err)
	}
	return nil
}
