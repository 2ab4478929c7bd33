package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/strata-broker/strata/metadata"
)

// errIDTaken ends a Run whose broker id another live process holds: two
// brokers must never serve under one id.
var errIDTaken = errors.New("broker id registered by another live process")

// Registration retries: the pause between attempts (doubling up to the
// max), and the bound of one attempt, so that a metadata store that does
// not answer is asked again rather than waited on forever.
const (
	registerRetryMin = 200 * time.Millisecond
	registerRetryMax = 2 * time.Second
	registerAttempt  = 5 * time.Second
)

// membership keeps this broker registered for the whole Run, as Kafka's
// ZooKeeper-mode broker re-creates its /brokers/ids/N node with a new
// session after its session expired: when the registration is lost (its
// lease expired while the metadata store was out of reach for longer than
// broker.session.timeout.ms, or while the process was stopped), it
// registers again under a new lease and goes on serving meanwhile. Only an
// id held by another live process (another incarnation) for longer than
// the grace of an earlier process's lease (registerGrace) ends the Run.
//
// It is the metadata.Registration the rest of the broker uses: Lost is
// closed only when it gave up; Revision and RequestShutdown act on the
// registration of the moment, and a controlled shutdown requested is
// carried over to the next one.
//
// Concurrency: run's goroutine (the "registration" component's loop)
// replaces the registration; mu guards it and the shutdown flag, read by
// the controlled shutdown's goroutine. Close runs after run returned.
type membership struct {
	store metadata.Brokers
	self  metadata.Broker
	ttl   time.Duration
	log   *slog.Logger

	lost chan struct{} // closed when run gave up

	mu           sync.Mutex
	reg          metadata.Registration // nil while registering again
	shuttingDown bool
}

var _ metadata.Registration = (*membership)(nil)

func newMembership(store metadata.Brokers, self metadata.Broker, ttl time.Duration, log *slog.Logger) *membership {
	return &membership{store: store, self: self, ttl: ttl, log: log, lost: make(chan struct{})}
}

// registerGrace is how long a registration waits for a broker id held by
// another incarnation to be freed: the lease of this broker's crashed
// predecessor on another log directory expires within a TTL.
func (m *membership) registerGrace() time.Duration { return 2*m.ttl + 5*time.Second }

// register registers the broker, retrying while the store is unavailable
// (each failure reported to waiting, if set) until ctx ends, and while the
// id is held by another incarnation until registerGrace passed.
func (m *membership) register(ctx context.Context, waiting func(error)) (metadata.Registration, error) {
	backoff := registerRetryMin
	var heldSince time.Time
	for {
		actx, cancel := context.WithTimeout(ctx, registerAttempt)
		reg, err := m.store.RegisterBroker(actx, m.self, m.ttl)
		cancel()
		if err == nil {
			return reg, nil
		}
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("register broker %d: %w (last attempt: %v)", m.self.ID, context.Cause(ctx), err)
		case errors.Is(err, metadata.ErrBrokerRegistered):
			if heldSince.IsZero() {
				heldSince = time.Now()
				m.log.Info("broker id still registered by another process; waiting for its lease to expire",
					"node.id", m.self.ID, "err", err, "gives_up_in", m.registerGrace())
			} else if time.Since(heldSince) > m.registerGrace() {
				return nil, fmt.Errorf("register broker %d: %w: %w", m.self.ID, errIDTaken, err)
			}
		case errors.Is(err, metadata.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
			if waiting != nil {
				waiting(err)
			} else {
				m.log.Debug("register broker: metadata store unavailable; retrying", "err", err)
			}
		default:
			return nil, fmt.Errorf("register broker %d: %w", m.self.ID, err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		backoff = min(2*backoff, registerRetryMax)
	}
}

// run registers the broker again each time its registration is lost,
// until ctx ends. If that fails for good (the id is taken) it closes Lost
// and reports the failure, which stops the broker.
func (m *membership) run(ctx context.Context, fail func(error)) {
	for {
		m.mu.Lock()
		reg := m.reg
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-reg.Lost():
		}
		m.mu.Lock()
		m.reg = nil
		m.mu.Unlock()
		lostAt := time.Now()
		m.log.Warn("broker registration lost (its lease expired); registering again, serving meanwhile", "node.id", m.self.ID)
		next, err := m.register(ctx, nil)
		if err != nil {
			if ctx.Err() == nil {
				close(m.lost)
				fail(err)
			}
			return
		}
		m.mu.Lock()
		m.reg = next
		shutting := m.shuttingDown
		m.mu.Unlock()
		if shutting {
			if _, err := next.RequestShutdown(ctx); err != nil {
				m.log.Warn("controlled shutdown: cannot announce it on the new registration", "err", err)
			}
		}
		m.log.Info("broker registered again", "node.id", m.self.ID, "after", time.Since(lostAt).Round(time.Millisecond), "revision", next.Revision())
	}
}

// current is the registration of the moment, nil while registering again.
func (m *membership) current() metadata.Registration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reg
}

// Lost is closed when the broker could not register again.
func (m *membership) Lost() <-chan struct{} { return m.lost }

// Revision is the revision the current registration was written at (0
// while registering again).
func (m *membership) Revision() int64 {
	if reg := m.current(); reg != nil {
		return reg.Revision()
	}
	return 0
}

// RequestShutdown flags the current registration, and any later one, as
// shutting down.
func (m *membership) RequestShutdown(ctx context.Context) (int64, error) {
	m.mu.Lock()
	m.shuttingDown = true
	reg := m.reg
	m.mu.Unlock()
	if reg == nil {
		return 0, fmt.Errorf("controlled shutdown of broker %d: not registered at the moment: %w", m.self.ID, metadata.ErrClosed)
	}
	return reg.RequestShutdown(ctx)
}

// Close withdraws the current registration. Call it after run returned.
func (m *membership) Close() error {
	m.mu.Lock()
	reg := m.reg
	m.reg = nil
	m.mu.Unlock()
	if reg == nil {
		return nil
	}
	return reg.Close()
}
