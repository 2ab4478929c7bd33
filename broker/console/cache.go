package console

import (
	"cmp"
	"sync"
	"time"
)

// ttlCache holds a value that is costly to gather (it asks every broker)
// and reuses it for a time to live. Once there is a value, a request
// never waits for a gather: past the time to live it gets the held value
// while one gather runs in the background (bg) to replace it. Only the
// first request waits, and the requests that come meanwhile share its
// value.
type ttlCache[T any] struct {
	bg *sync.WaitGroup // the background gathers; nil: they are not waited for

	mu       sync.Mutex
	ttl      time.Duration // 0: the default get is given
	at       time.Time
	val      T
	ok       bool
	building bool
	first    chan struct{} // closed when the first value is held
}

// get is the held value; older than the cache's ttl (or def when that is
// unset), it starts a gather in the background.
func (c *ttlCache[T]) get(def time.Duration, gather func() T) T {
	c.mu.Lock()
	if c.ok {
		v := c.val
		if time.Since(c.at) >= cmp.Or(c.ttl, def) && !c.building {
			c.building = true
			if c.bg != nil {
				c.bg.Add(1)
			}
			go func() {
				if c.bg != nil {
					defer c.bg.Done()
				}
				c.hold(gather())
			}()
		}
		c.mu.Unlock()
		return v
	}
	if c.building { // the first gather runs: wait for it
		first := c.first
		c.mu.Unlock()
		<-first
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.val
	}
	c.building, c.first = true, make(chan struct{})
	c.mu.Unlock()
	v := gather()
	c.hold(v)
	return v
}

// hold keeps v, just gathered.
func (c *ttlCache[T]) hold(v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.val, c.at, c.ok, c.building = v, time.Now(), true, false
	if c.first != nil {
		close(c.first)
		c.first = nil
	}
}

// set holds v for ttl, as if just gathered (benchmarks preload it).
func (c *ttlCache[T]) set(v T, ttl time.Duration) {
	c.hold(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ttl = ttl
}
