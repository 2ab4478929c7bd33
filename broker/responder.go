package broker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-broker/strata/broker/wire"
)

// maxInFlight bounds the requests of one connection that are read but not
// yet answered.
const maxInFlight = 64

// pending is one request's place in a connection's response order.
type pending struct {
	frame *wire.Frame // nil: no response (acks=0)
	err   error       // set: close the connection
	close bool        // close the connection once frame is written
	done  bool        // the response is ready; guarded by responder.mu
}

// responder writes one connection's responses in request order. It has no
// goroutine of its own: whichever goroutine completes the oldest unanswered
// request writes that response and every later one already complete, so
// the response to a request handled on the connection's read goroutine
// goes out without a switch to another goroutine (the round trip of a
// small request such as OffsetCommit is mostly such switches).
type responder struct {
	c      net.Conn
	cancel context.CancelFunc
	log    *slog.Logger
	slots  chan struct{}  // one token per unanswered request, at most maxInFlight
	open   sync.WaitGroup // unanswered requests
	// answered counts the responses written or dropped, for the idle
	// check: a connection that answered lately is not idle.
	answered atomic.Uint64
	// writeTimeout (connections.max.idle.ms; 0: none) bounds a stalled
	// write: the write deadline is moved to now+writeTimeout whenever
	// less than half of it is left, so every write has at least half of
	// it. writeDeadline is owned by the goroutine writing.
	writeTimeout  time.Duration
	writeDeadline time.Time

	mu      sync.Mutex
	queue   []*pending // unanswered requests in request order; guarded by mu
	writing bool       // a goroutine is writing responses; guarded by mu
	failed  bool       // a write failed or a request closes the connection: drop the rest; guarded by mu
}

func newResponder(c net.Conn, cancel context.CancelFunc, log *slog.Logger) *responder {
	return &responder{c: c, cancel: cancel, log: log, slots: make(chan struct{}, maxInFlight)}
}

// add queues a place for the next request's response, waiting while
// maxInFlight requests are unanswered; false when ctx ended first.
func (r *responder) add(ctx context.Context) (*pending, bool) {
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, false
	}
	p := &pending{}
	r.open.Add(1)
	r.mu.Lock()
	r.queue = append(r.queue, p)
	r.mu.Unlock()
	return p, true
}

// complete marks p's response ready (its frame and err set by the caller)
// and, unless another goroutine is writing, writes every ready response at
// the head of the queue.
func (r *responder) complete(p *pending) {
	r.mu.Lock()
	p.done = true
	if r.writing {
		r.mu.Unlock()
		return
	}
	r.writing = true
	for len(r.queue) > 0 && r.queue[0].done {
		head := r.queue[0]
		r.queue[0] = nil
		r.queue = r.queue[1:]
		failed := r.failed
		r.mu.Unlock()
		failed = r.write(head, failed)
		r.answered.Add(1)
		<-r.slots
		r.open.Done()
		r.mu.Lock()
		r.failed = failed
	}
	r.writing = false
	r.mu.Unlock()
}

// write sends one response, or drops it when the connection has failed; it
// reports whether the connection has failed afterwards.
func (r *responder) write(p *pending, failed bool) bool {
	switch {
	case failed:
		if p.frame != nil {
			p.frame.Release()
		}
		return true
	case p.err != nil:
		r.log.Warn("closing connection", "err", p.err)
		r.cancel()
		return true
	case p.frame == nil:
		return false
	}
	if r.writeTimeout > 0 {
		if now := time.Now(); r.writeDeadline.Sub(now) < r.writeTimeout/2 {
			r.writeDeadline = now.Add(r.writeTimeout)
			_ = r.c.SetWriteDeadline(r.writeDeadline)
		}
	}
	if err := wire.WriteFrame(r.c, p.frame); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			r.log.Warn("closing connection: response not taken within connections.max.idle.ms", "timeout", r.writeTimeout)
		}
		r.cancel()
		return true
	}
	if p.close {
		r.cancel()
		return true
	}
	return false
}

// unanswered is the number of requests read and not yet answered.
func (r *responder) unanswered() int { return len(r.slots) }

// wait returns once every queued request has been answered or dropped.
func (r *responder) wait() { r.open.Wait() }
