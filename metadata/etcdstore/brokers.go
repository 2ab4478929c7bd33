package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/metadata"
)

// revokeTimeout bounds the lease revoke in Registration.Close.
const revokeTimeout = 5 * time.Second

// RegisterBroker writes brokers/ids/<id> attached to a fresh lease of ttl
// (rounded up to whole seconds; etcd may raise very short ttls to its
// minimum) and keeps the lease alive in a goroutine until Close. The key
// is created only if absent, so a second live registration of the same id
// fails with ErrBrokerRegistered; once a dead broker's lease expires its
// key vanishes and the id is free again, like ZooKeeper's ephemeral
// /brokers/ids nodes. Store.Close closes registrations still open.
//
// The keep-alives ride out an outage: while etcd does not answer they are
// retried, and the registration is lost (Lost) only when etcd answers
// that the lease is gone — never because the client stopped hearing from
// it, since a restarted or re-elected etcd leader extends every lease and
// the registration may well have survived.
func (s *Store) RegisterBroker(ctx context.Context, b metadata.Broker, ttl time.Duration) (metadata.Registration, error) {
	op := fmt.Sprintf("register broker %d", b.ID)
	if err := s.checkOpen(op); err != nil {
		return nil, err
	}
	if b.ID < 0 || b.Host == "" || b.Port <= 0 || b.Port > math.MaxUint16 {
		return nil, fmt.Errorf("etcdstore: %s: invalid broker %+v", op, b)
	}
	secs := max(int64((ttl+time.Second-1)/time.Second), 1)
	granted := time.Now()
	lease, err := s.cli.Grant(ctx, secs)
	if err != nil {
		return nil, writeErr(op+": grant lease", err)
	}
	key := s.keys.broker(b.ID)
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, encodeBroker(b), clientv3.WithLease(lease.ID))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		s.revoke(lease.ID)
		return nil, writeErr(op, err)
	}
	s.outage.ok(granted)
	if !resp.Succeeded {
		s.revoke(lease.ID)
		holder := "unknown"
		if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
			old, err := decodeBroker(kvs[0].Value)
			if err == nil && b.Incarnation != "" && old.Incarnation == b.Incarnation && !reclaimed(ctx) {
				// Our own log directory's earlier process: it is gone (the
				// directory is locked by us), so take its place at once.
				s.revoke(clientv3.LeaseID(kvs[0].Lease))
				s.log.Info("took over the registration of this broker's previous process", "broker", b.ID)
				return s.RegisterBroker(context.WithValue(ctx, reclaimKey{}, true), b, ttl)
			}
			if err == nil {
				holder = old.Addr()
			}
		}
		return nil, fmt.Errorf("etcdstore: %s: held by %s until its lease expires: %w", op, holder, metadata.ErrBrokerRegistered)
	}
	kctx, cancel := context.WithCancel(context.Background())
	r := &registration{
		s: s, b: b, lease: lease.ID, ttl: time.Duration(lease.TTL) * time.Second, rev: resp.Header.Revision,
		cancel: cancel, lost: make(chan struct{}), done: make(chan struct{}),
	}
	r.deadline.Store(granted.Add(r.ttl).UnixNano())
	go r.keepAlive(kctx)
	s.mu.Lock()
	s.regs[r] = struct{}{}
	s.mu.Unlock()
	if err := s.checkOpen(op); err != nil { // Close ran meanwhile and missed r
		_ = r.Close()
		return nil, err
	}
	if _, err := s.visible(ctx, op, r.rev); err != nil {
		_ = r.Close()
		return nil, err
	}
	return r, nil
}

// revoke drops a lease, best effort: a lease etcd cannot be reached to
// revoke (an outage) expires by itself after its TTL, which is logged and
// not an error.
func (s *Store) revoke(id clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(context.Background(), revokeTimeout)
	defer cancel()
	_, err := s.cli.Revoke(ctx, id)
	switch {
	case err == nil, errors.Is(err, rpctypes.ErrLeaseNotFound):
		return nil
	case unreachable(err):
		s.log.Info("lease not revoked: etcd unreachable; it expires after its TTL", "lease", int64(id), "err", err)
		return nil
	default:
		return fmt.Errorf("etcdstore: revoke lease %x: %w", int64(id), err)
	}
}

// keepAliveRetry is the pause between keep-alive attempts that failed.
const keepAliveRetry = 500 * time.Millisecond

// registration is the metadata.Registration of one broker. Its goroutine
// (keepAlive) renews the lease and ends when etcd says the lease is gone
// or Close cancelled it.
type registration struct {
	s      *Store
	b      metadata.Broker // as registered; never modified
	lease  clientv3.LeaseID
	ttl    time.Duration // as granted
	rev    int64
	cancel context.CancelFunc // stops the keep-alives

	// deadline (unix nanoseconds) is when the lease expires at the
	// earliest: the last renewal's send time plus the TTL etcd granted.
	deadline atomic.Int64

	closing atomic.Bool   // set by Close before cancel: not a loss
	lost    chan struct{} // closed by keepAlive when etcd says the lease is gone
	done    chan struct{} // closed when keepAlive returns
	once    sync.Once
	err     error // Close's result, set once
}

// keepAlive renews the lease every third of its TTL, each attempt bounded
// by that third, until ctx ends (Close). An attempt that etcd does not
// answer is retried after keepAliveRetry and reported to the store's
// outage log; only etcd's answer that the lease is gone (it expired while
// etcd was out of reach, or was revoked) loses the registration. The
// client's own KeepAlive is not used: it gives up once it has not heard
// from etcd for a TTL, which says nothing about the lease.
func (r *registration) keepAlive(ctx context.Context) {
	defer close(r.done)
	every := max(r.ttl/3, 100*time.Millisecond)
	wait := every
	for sleepCtx(ctx, wait) {
		actx, cancel := context.WithTimeout(ctx, every)
		sent := time.Now()
		resp, err := r.s.cli.KeepAliveOnce(actx, r.lease)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			r.deadline.Store(sent.Add(time.Duration(resp.TTL) * time.Second).UnixNano())
			r.s.outage.ok(sent)
			wait = every
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			r.s.outage.ok(sent) // etcd answered
			r.s.log.Info("broker registration lost: its lease expired", "broker", r.b.ID, "lease", int64(r.lease),
				"expired_after", time.Since(time.Unix(0, r.deadline.Load())).Round(time.Millisecond))
			close(r.lost)
			return
		default:
			r.s.retryFailed("broker lease keep-alive failed", sent, err, "broker", r.b.ID)
			wait = keepAliveRetry
		}
	}
}

// leaseDeadline is the earliest lease deadline of the open registrations.
func (s *Store) leaseDeadline() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var first int64
	for r := range s.regs {
		if d := r.deadline.Load(); first == 0 || d < first {
			first = d
		}
	}
	return time.Unix(0, first), first != 0
}

// Lost is closed if the lease ended without Close.
func (r *registration) Lost() <-chan struct{} { return r.lost }

// Revision is the revision the registration key was created at.
func (r *registration) Revision() int64 { return r.rev }

// RequestShutdown rewrites brokers/ids/<id> with ShuttingDown set, in a
// txn guarded by the key still being attached to this registration's
// lease (a lost registration's key is gone or another process's).
func (r *registration) RequestShutdown(ctx context.Context) (int64, error) {
	op := fmt.Sprintf("controlled shutdown of broker %d", r.b.ID)
	select {
	case <-r.lost:
		return 0, fmt.Errorf("etcdstore: %s: registration lost: %w", op, metadata.ErrClosed)
	default:
	}
	if r.closing.Load() {
		return 0, fmt.Errorf("etcdstore: %s: registration closed: %w", op, metadata.ErrClosed)
	}
	b := r.b
	b.ShuttingDown = true
	key := r.s.keys.broker(b.ID)
	resp, err := r.s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.LeaseValue(key), "=", r.lease)).
		Then(clientv3.OpPut(key, encodeBroker(b), clientv3.WithLease(r.lease))).
		Commit()
	if err != nil {
		return 0, fmt.Errorf("etcdstore: %s: %w", op, unavailable(err))
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("etcdstore: %s: the broker key is no longer this registration's: %w", op, metadata.ErrClosed)
	}
	return r.s.visible(ctx, op, resp.Header.Revision)
}

// Close stops the keep-alives and revokes the lease, which deletes the
// broker key at once.
func (r *registration) Close() error {
	r.once.Do(func() {
		r.closing.Store(true)
		r.cancel()
		<-r.done
		select {
		case <-r.lost: // the lease is gone (or going): nothing to revoke
		default:
			r.err = r.s.revoke(r.lease)
		}
		r.s.mu.Lock()
		delete(r.s.regs, r)
		r.s.mu.Unlock()
	})
	return r.err
}

// reclaimKey marks a registration retried after revoking the lease of this
// broker's previous incarnation, so the takeover is tried only once.
type reclaimKey struct{}

func reclaimed(ctx context.Context) bool { return ctx.Value(reclaimKey{}) != nil }
