package console

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestTTLCache: the first requests wait for one gather and share it;
// later ones never wait: past the time to live they get the held value
// while a single background gather replaces it.
func TestTTLCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var bg sync.WaitGroup
		c := ttlCache[int64]{bg: &bg}
		var gathers atomic.Int64
		release := make(chan struct{})
		gather := func() int64 {
			n := gathers.Add(1)
			<-release
			return n
		}
		got := make(chan int64, 2)
		for range 2 {
			go func() { got <- c.get(time.Second, gather) }()
		}
		synctest.Wait() // both wait on the first gather
		close(release)
		if a, b := <-got, <-got; a != 1 || b != 1 || gathers.Load() != 1 {
			t.Fatalf("first requests got %d and %d after %d gathers, want 1, 1 after 1", a, b, gathers.Load())
		}
		if v := c.get(time.Second, gather); v != 1 || gathers.Load() != 1 {
			t.Fatalf("fresh: %d after %d gathers", v, gathers.Load())
		}
		time.Sleep(2 * time.Second)
		release = make(chan struct{})
		for range 3 {
			if v := c.get(time.Second, gather); v != 1 {
				t.Fatalf("stale while gathering: %d, want the held 1", v)
			}
		}
		synctest.Wait()
		if n := gathers.Load(); n != 2 {
			t.Fatalf("%d gathers, want one in the background", n)
		}
		close(release)
		bg.Wait()
		if v := c.get(time.Second, gather); v != 2 {
			t.Fatalf("after the background gather: %d, want 2", v)
		}
	})
}
