package broker

import (
	"context"
	"sync"
	"sync/atomic"
)

// requestMemory counts the bytes of request frames read by all
// connections and not yet handled, against queued.max.request.bytes:
// at the limit, reading pauses (Kafka's memory pool: a connection is
// muted, not failed) until handled requests give their bytes back. A
// read that starts below the limit may take the count past it, so a
// frame larger than the limit is still read, as Kafka's pool allows.
//
// A frame's bytes are given back once its handler's synchronous part
// has run (or, for an asynchronous API, once its handler returned):
// a request waiting only for replication or a timer holds none, so
// requests that wait cannot stop the reading of those they wait for.
type requestMemory struct {
	limit int64 // <= 0: unbounded
	used  atomic.Int64

	waiters atomic.Int32 // goroutines in wait's slow path
	mu      sync.Mutex
	freed   chan struct{} // closed when bytes are given back while some wait; guarded by mu
}

func newRequestMemory(limit int64) *requestMemory { return &requestMemory{limit: limit} }

// wait returns once more bytes may be read, or ctx's error.
func (m *requestMemory) wait(ctx context.Context) error {
	if m.limit <= 0 || m.used.Load() < m.limit {
		return nil
	}
	m.waiters.Add(1)
	defer m.waiters.Add(-1)
	for {
		m.mu.Lock()
		if m.used.Load() < m.limit {
			m.mu.Unlock()
			return nil
		}
		if m.freed == nil {
			m.freed = make(chan struct{})
		}
		freed := m.freed
		m.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// add counts n bytes read.
func (m *requestMemory) add(n int) { m.used.Add(int64(n)) }

// release gives n bytes back and wakes the readers waiting.
func (m *requestMemory) release(n int) {
	if n == 0 {
		return
	}
	m.used.Add(-int64(n))
	if m.waiters.Load() == 0 {
		return
	}
	m.mu.Lock()
	if m.freed != nil {
		close(m.freed)
		m.freed = nil
	}
	m.mu.Unlock()
}

// connBudget is one connection's wire.Budget: its frame reads wait on
// and are counted in requestMemory, and it remembers how many bytes the
// frame being read holds. Only the connection's reading goroutine uses it.
type connBudget struct {
	mem  *requestMemory
	ctx  context.Context // the connection's: waiting ends when it closes or serving ends
	held int             // bytes counted for the frame being read
	// paused runs after a wait that blocked, so that the time reading
	// was paused does not count against the frame's read deadline.
	paused func()
}

func (b *connBudget) Wait() error {
	if b.mem.limit <= 0 || b.mem.used.Load() < b.mem.limit {
		return nil
	}
	if err := b.mem.wait(b.ctx); err != nil {
		return err
	}
	b.paused()
	return nil
}

func (b *connBudget) Add(n int) {
	b.mem.add(n)
	b.held += n
}

// take returns the bytes the frame just read holds, which its request
// gives back (requestMemory.release), and starts counting the next frame.
func (b *connBudget) take() int {
	n := b.held
	b.held = 0
	return n
}
