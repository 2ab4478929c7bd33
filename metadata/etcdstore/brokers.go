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
func (s *Store) RegisterBroker(ctx context.Context, b metadata.Broker, ttl time.Duration) (metadata.Registration, error) {
	op := fmt.Sprintf("register broker %d", b.ID)
	if err := s.checkOpen(op); err != nil {
		return nil, err
	}
	if b.ID < 0 || b.Host == "" || b.Port <= 0 || b.Port > math.MaxUint16 {
		return nil, fmt.Errorf("etcdstore: %s: invalid broker %+v", op, b)
	}
	secs := max(int64((ttl+time.Second-1)/time.Second), 1)
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
	alive, err := s.cli.KeepAlive(kctx, lease.ID)
	if err != nil {
		cancel()
		s.revoke(lease.ID)
		return nil, fmt.Errorf("etcdstore: %s: keep lease alive: %w", op, err)
	}
	r := &registration{
		s: s, b: b, lease: lease.ID, rev: resp.Header.Revision,
		cancel: cancel, lost: make(chan struct{}), done: make(chan struct{}),
	}
	go r.keepAlive(alive)
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

// revoke drops a lease, best effort (it expires by itself otherwise).
func (s *Store) revoke(id clientv3.LeaseID) error {
	ctx, cancel := context.WithTimeout(context.Background(), revokeTimeout)
	defer cancel()
	if _, err := s.cli.Revoke(ctx, id); err != nil && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return fmt.Errorf("etcdstore: revoke lease %x: %w", int64(id), err)
	}
	return nil
}

// registration is the metadata.Registration of one broker. Its goroutine
// (keepAlive) drains the keep-alive responses and ends when the lease is
// gone or Close cancelled it.
type registration struct {
	s      *Store
	b      metadata.Broker // as registered; never modified
	lease  clientv3.LeaseID
	rev    int64
	cancel context.CancelFunc // stops the keep-alive stream

	closing atomic.Bool   // set by Close before cancel: not a loss
	lost    chan struct{} // closed by keepAlive on an unexpected end
	done    chan struct{} // closed when keepAlive returns
	once    sync.Once
	err     error // Close's result, set once
}

func (r *registration) keepAlive(alive <-chan *clientv3.LeaseKeepAliveResponse) {
	defer close(r.done)
	for range alive {
	}
	if !r.closing.Load() {
		r.s.log.Error("broker registration lost: lease expired or etcd unreachable", "broker", r.b.ID, "lease", int64(r.lease))
		close(r.lost)
	}
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
		return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
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
