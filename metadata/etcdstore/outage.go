package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strata-broker/strata/metadata"
)

// outageProgressEvery is how often an ongoing outage is logged again.
const outageProgressEvery = 10 * time.Second

// unreachable reports whether err says etcd could not be reached or could
// not answer (no connection, no raft leader or quorum, an attempt timed
// out): a condition that passes, as opposed to a refused request.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, metadata.ErrUnavailable) {
		return true
	}
	// The client turns etcd's own errors (no leader, request timed out,
	// leader changed, …) into EtcdErrors; all the passing ones carry
	// Unavailable. Transport errors stay gRPC statuses.
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

// unavailable wraps an unreachable error as metadata.ErrUnavailable, so
// callers can tell a passing outage (which the store logs itself) from a
// refused request; other errors are returned as they are.
func unavailable(err error) error {
	if err == nil || errors.Is(err, metadata.ErrUnavailable) || !unreachable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", metadata.ErrUnavailable, err)
}

// outage tracks whether etcd answers, from the outcomes of the store's own
// periodic requests — its registrations' keep-alives, the watch's re-lists,
// the controller record's reads — and logs an outage once: a warning
// when a request first fails to reach etcd, progress every
// outageProgressEvery while none succeeds (for how long, and until when
// the broker's lease holds), and when one succeeds again. The loops that
// report here log their own failures only at debug level.
type outage struct {
	log *slog.Logger
	// leases reports the earliest deadline of the open registrations'
	// leases (ok false without one).
	leases func() (deadline time.Time, ok bool)

	mu       sync.Mutex
	since    time.Time // start of the current outage; zero while etcd answers
	answered time.Time // when a request etcd answered was sent, the latest
	reported time.Time // when the outage was last logged
}

// failed records a request, sent at began, that could not reach etcd. A
// request sent before one that etcd answered says nothing new (it may
// have hung on a connection that is gone since) and is ignored, so that
// the tail of an outage does not log a new one.
func (o *outage) failed(err error, began time.Time) {
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if began.Before(o.answered) {
		return
	}
	switch {
	case o.since.IsZero():
		o.since, o.reported = now, now
		o.log.Warn("etcd unreachable; serving from the cached metadata until it answers", append(o.leaseAttrs(now), "err", err)...)
	case now.Sub(o.reported) >= outageProgressEvery:
		o.reported = now
		o.log.Info("etcd still unreachable", append(o.leaseAttrs(now), "for", now.Sub(o.since).Round(time.Second), "err", err)...)
	}
}

// ok records a request, sent at began, that etcd answered.
func (o *outage) ok(began time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if began.After(o.answered) {
		o.answered = began
	}
	if o.since.IsZero() {
		return
	}
	o.log.Info("etcd reachable again", "after", time.Since(o.since).Round(time.Millisecond))
	o.since = time.Time{}
}

// leaseAttrs says until when the broker's lease holds, or since when it
// may have expired (then the controller may have moved its leaderships).
// o.mu must be held; leases takes only the store's mu.
func (o *outage) leaseAttrs(now time.Time) []any {
	if o.leases == nil {
		return nil
	}
	d, ok := o.leases()
	if !ok {
		return nil
	}
	if left := d.Sub(now); left > 0 {
		return []any{"lease_valid_for", left.Round(100 * time.Millisecond)}
	}
	return []any{"lease_may_have_expired_for", now.Sub(d).Round(100 * time.Millisecond)}
}

// retryFailed reports a failed request, sent at began, of a background
// loop: an unreachable etcd goes to the outage log (the loop's own
// message only at debug), any other failure is logged as a warning.
func (s *Store) retryFailed(msg string, began time.Time, err error, args ...any) {
	if unreachable(err) {
		s.outage.failed(err, began)
		s.log.Debug(msg, append(args, "err", err)...)
		return
	}
	s.log.Warn(msg, append(args, "err", err)...)
}
