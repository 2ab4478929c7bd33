package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// component is one part of a running broker. components (components.go)
// lists them in the order they start; they stop in the reverse order.
// Every field is optional.
type component struct {
	name string
	// start brings the part up. Its ctx ends when start-up is abandoned
	// (the broker is asked to stop, or a running part failed); nothing
	// started may outlive the call bound to it.
	start func(ctx context.Context) error
	// run is the part's long-running work, begun once start returned. It
	// returns only after its ctx ends, which happens at the part's turn
	// to stop; fail asks for the ordered stop of the whole broker (the
	// part keeps running until its turn comes).
	run func(ctx context.Context, fail func(error))
	// stop releases what start took, after run returned.
	stop func() error
}

// lifecycle starts components in order and stops the started ones in
// reverse. A failing start stops the parts started before it; a failing
// run (fail) or the end of the caller's ctx triggers the same ordered
// stop.
//
// errgroup does not fit: it cancels one context shared by every goroutine
// at the first error, which stops all parts at once; here each part's
// loop has its own context, cancelled at its turn, and a part that fails
// keeps serving until then (the Kafka listener's connections drain only
// after the controlled shutdown ran).
type lifecycle struct {
	log *slog.Logger
	// beforeStart, when set, runs before each start and fails it with its
	// error; tests use it to fail steps the real parts cannot fail on
	// demand.
	beforeStart func(step string) error

	stopping context.Context // ends when the broker is to stop
	cancel   context.CancelFunc

	mu     sync.Mutex
	failed error // the first failure reported by a running part

	up []started // in start order
}

// started is a component that started, with its run loop's cancel and
// end (nil without a run).
type started struct {
	c      *component
	cancel context.CancelFunc
	done   chan struct{}
}

func newLifecycle(ctx context.Context, log *slog.Logger, beforeStart func(string) error) *lifecycle {
	stopping, cancel := context.WithCancel(ctx)
	return &lifecycle{log: log, beforeStart: beforeStart, stopping: stopping, cancel: cancel}
}

// Stopping ends when the broker is asked to stop or a part failed.
func (l *lifecycle) Stopping() <-chan struct{} { return l.stopping.Done() }

// fail records a running part's failure (the first one is kept) and
// triggers the ordered stop.
func (l *lifecycle) fail(step string, err error) {
	err = fmt.Errorf("%s: %w", step, err)
	l.mu.Lock()
	first := l.failed == nil
	if first {
		l.failed = err
	}
	l.mu.Unlock()
	if first {
		l.log.Error("broker part failed; stopping", "step", step, "err", err)
	}
	l.cancel()
}

// Failure is the first failure a running part reported (nil if none).
func (l *lifecycle) Failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// Start starts cs in order. When one fails it stops those started before
// it and returns the failure, naming the step.
func (l *lifecycle) Start(cs []component) error {
	for i := range cs {
		c := &cs[i]
		if err := l.startOne(c); err != nil {
			err = fmt.Errorf("broker: start %s: %w", c.name, err)
			l.log.Error("start-up failed; stopping the parts started", "step", c.name, "err", err)
			return errors.Join(err, l.Failure(), l.Stop())
		}
	}
	return nil
}

func (l *lifecycle) startOne(c *component) error {
	if err := l.stopping.Err(); err != nil {
		return err // asked to stop, or a part failed, before this step
	}
	if l.beforeStart != nil {
		if err := l.beforeStart(c.name); err != nil {
			return err
		}
	}
	if c.start != nil {
		if err := c.start(l.stopping); err != nil {
			return err
		}
	}
	s := started{c: c}
	if c.run != nil {
		ctx, cancel := context.WithCancel(context.WithoutCancel(l.stopping))
		s.cancel, s.done = cancel, make(chan struct{})
		go func() {
			defer close(s.done)
			c.run(ctx, func(err error) { l.fail(c.name, err) })
		}()
	}
	l.up = append(l.up, s)
	return nil
}

// Stop stops the started components in reverse order: each one's run
// ends (its ctx is cancelled and its return awaited), then its stop runs.
// Every step runs even when an earlier one failed; the failures are
// returned together.
func (l *lifecycle) Stop() error {
	l.cancel()
	var errs []error
	for i := len(l.up) - 1; i >= 0; i-- {
		s := l.up[i]
		begin := time.Now()
		if s.cancel != nil {
			s.cancel()
			<-s.done
		}
		if s.c.stop != nil {
			if err := s.c.stop(); err != nil {
				l.log.Error("stop step failed", "step", s.c.name, "err", err)
				errs = append(errs, fmt.Errorf("broker: stop %s: %w", s.c.name, err))
			}
		}
		l.log.Debug("stopped", "step", s.c.name, "took", time.Since(begin))
	}
	l.up = nil
	return errors.Join(errs...)
}
