package memstore

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/strata-broker/strata/metadata"
)

// RegisterBroker publishes b until the registration is closed, its handle
// closes, or its lease is made to expire (Backend.ExpireBroker); ttl is
// accepted and ignored. A live registration of b.ID fails it with
// metadata.ErrBrokerRegistered unless both carry the same non-empty
// Incarnation: then the old one is lost and replaced, as etcdstore does
// for a broker restarted on its own log directory.
func (s *Store) RegisterBroker(_ context.Context, br metadata.Broker, _ time.Duration) (metadata.Registration, error) {
	op := fmt.Sprintf("register broker %d", br.ID)
	if br.ID < 0 || br.Host == "" || br.Port <= 0 || br.Port > math.MaxUint16 {
		return nil, fmt.Errorf("memstore: %s: invalid broker %+v", op, br)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(op); err != nil {
		return nil, err
	}
	if old := b.brokers[br.ID]; old != nil {
		if br.Incarnation == "" || old.b.Incarnation != br.Incarnation {
			return nil, fmt.Errorf("memstore: %s: held by %s: %w", op, old.b.Addr(), metadata.ErrBrokerRegistered)
		}
		b.endRegistration(old, true)
	}
	r := &registration{s: s, b: br, lost: make(chan struct{})}
	b.brokers[br.ID] = r
	s.regs[r] = struct{}{}
	r.rev = b.commit(metadata.Change{Kind: metadata.ChangeBroker, Broker: br})
	return r, nil
}

// registration is a metadata.Registration. b, over and the membership in
// s.regs are guarded by Backend.mu.
type registration struct {
	s    *Store
	b    metadata.Broker
	rev  int64
	lost chan struct{} // closed when the lease expired
	over bool          // closed, lost or withdrawn
}

// Lost is closed when the registration expired without Close.
func (r *registration) Lost() <-chan struct{} { return r.lost }

// Revision is the revision the registration was written at.
func (r *registration) Revision() int64 { return r.rev }

// RequestShutdown rewrites the broker's record with ShuttingDown set.
func (r *registration) RequestShutdown(context.Context) (int64, error) {
	b := r.s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.over {
		return 0, fmt.Errorf("memstore: controlled shutdown of broker %d: registration over: %w", r.b.ID, metadata.ErrClosed)
	}
	r.b.ShuttingDown = true
	return b.commit(metadata.Change{Kind: metadata.ChangeBroker, Broker: r.b}), nil
}

// Close withdraws the registration at once. Idempotent.
func (r *registration) Close() error {
	b := r.s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endRegistration(r, false)
	return nil
}

// endRegistration ends r: its broker key goes, and if lost its Lost
// channel is closed. b.mu must be held.
func (b *Backend) endRegistration(r *registration, lost bool) {
	if r.over {
		return
	}
	r.over = true
	delete(r.s.regs, r)
	if b.brokers[r.b.ID] == r {
		delete(b.brokers, r.b.ID)
		b.commit(metadata.Change{Kind: metadata.ChangeBroker, Delete: true, Broker: metadata.Broker{ID: r.b.ID}})
	}
	if lost {
		close(r.lost)
	}
}
