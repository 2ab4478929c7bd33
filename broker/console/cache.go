package console

import (
	"cmp"
	"sync"
	"time"
)

// ttlCache holds a value that is costly to gather (it asks every broker)
// and reuses it for a time to live; one gather runs at a time, and the
// requests that come meanwhile wait for it and share its value.
type ttlCache[T any] struct {
	mu  sync.Mutex    // held while gathering
	ttl time.Duration // 0: the default get is given
	at  time.Time
	val T
	ok  bool
}

// get is the held value, gathered again when older than the cache's ttl
// (or def when that is unset).
func (c *ttlCache[T]) get(def time.Duration, gather func() T) T {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok && time.Since(c.at) < cmp.Or(c.ttl, def) {
		return c.val
	}
	c.val, c.at, c.ok = gather(), time.Now(), true
	return c.val
}

// set holds v for ttl, as if just gathered (benchmarks preload it).
func (c *ttlCache[T]) set(v T, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.val, c.at, c.ok, c.ttl = v, time.Now(), true, ttl
}
