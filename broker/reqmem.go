package broker

import (
	"container/list"
	"context"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// freeFrameBytes of every frame are read without waiting on
// requestMemory (they are counted all the same).
const freeFrameBytes = 64 << 10

// requestMemory counts the bytes of request frames read by all
// connections and not yet handled, against queued.max.request.bytes: at
// the limit, reading pauses (Kafka's memory pool: a connection is muted,
// not failed) until handled requests give their bytes back.
//
// Unlike Kafka's pool, which takes a frame's announced size before its
// body is read, bytes are counted as they arrive, so a client announcing
// large frames holds nothing it did not send. Reading pauses only past
// the first freeFrameBytes of a frame: small requests (fetches,
// heartbeats, offset commits) go on however full the count is. And the
// oldest frame being read past its free bytes never pauses, so frames
// read part-way cannot wait on each other for ever: the count can exceed
// the limit by that frame (so a frame larger than the limit is still
// read, as Kafka's pool allows) and by one read of each other frame.
// A frame, paused or not, must arrive whole by its deadline
// (connections.max.idle.ms from its first byte).
//
// A frame's bytes are given back once its handler's synchronous part has
// run (or, for an asynchronous API, once its handler returned): a request
// waiting only for replication holds none.
type requestMemory struct {
	limit int64 // <= 0: unbounded
	used  atomic.Int64

	waiters atomic.Int32 // goroutines in wait's slow path
	mu      sync.Mutex
	reading list.List     // *connBudget of the frames read past their free bytes, oldest first; guarded by mu
	freed   chan struct{} // closed, while some wait, when bytes are given back or the oldest frame is read; guarded by mu
}

func newRequestMemory(limit int64) *requestMemory { return &requestMemory{limit: limit} }

// add counts n bytes read.
func (m *requestMemory) add(n int) { m.used.Add(int64(n)) }

// release gives n bytes back and wakes the readers waiting.
func (m *requestMemory) release(n int) {
	if n == 0 {
		return
	}
	m.used.Add(-int64(n))
	m.wake()
}

func (m *requestMemory) wake() {
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

// enter records that b's frame is read past its free bytes.
func (m *requestMemory) enter(b *connBudget) *list.Element {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reading.PushBack(b)
}

// leave records that the frame of e (from enter) is read or abandoned.
func (m *requestMemory) leave(e *list.Element) {
	m.mu.Lock()
	m.reading.Remove(e)
	m.mu.Unlock()
	m.wake()
}

// wait returns once the frame of e may read on: the count is below the
// limit or e's frame is the oldest being read. It fails when ctx ends
// (its error) or deadline passes first (os.ErrDeadlineExceeded; zero: no
// deadline).
func (m *requestMemory) wait(ctx context.Context, deadline time.Time, e *list.Element) error {
	m.waiters.Add(1)
	defer m.waiters.Add(-1)
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	for {
		m.mu.Lock()
		if m.used.Load() < m.limit || m.reading.Front() == e {
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
		case <-timeout:
			return os.ErrDeadlineExceeded
		}
	}
}

// connBudget is one connection's wire.Budget: every byte its frames read
// is counted in requestMemory, and past a frame's first freeFrameBytes
// its reads wait there (until the frame's deadline at most). It
// remembers how many bytes the frame being read holds. Only the
// connection's reading goroutine uses it.
type connBudget struct {
	mem      *requestMemory
	ctx      context.Context // the connection's reading: waiting ends when it closes or serving ends
	deadline time.Time       // by when the frame being read must have arrived (zero: no limit)
	held     int             // bytes counted for the frame being read
	reading  *list.Element   // in mem.reading while the frame is read past its free bytes
}

func (b *connBudget) Wait() error {
	if b.held < freeFrameBytes || b.mem.limit <= 0 {
		return nil
	}
	if b.reading == nil {
		b.reading = b.mem.enter(b)
	}
	if b.mem.used.Load() < b.mem.limit {
		return nil
	}
	return b.mem.wait(b.ctx, b.deadline, b.reading)
}

func (b *connBudget) Add(n int) {
	b.mem.add(n)
	b.held += n
}

// take ends the frame just read (or abandoned) and returns the bytes it
// holds, which its request gives back (requestMemory.release).
func (b *connBudget) take() int {
	if b.reading != nil {
		b.mem.leave(b.reading)
		b.reading = nil
	}
	n := b.held
	b.held = 0
	return n
}
