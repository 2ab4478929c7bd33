package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/metadata"
)

// Re-list backoff after the watch broke, and the bound of one attempt (a
// member that stopped answering must not hold the re-list forever).
const (
	relistMinBackoff = 50 * time.Millisecond
	relistMaxBackoff = 5 * time.Second
	relistTimeout    = 5 * time.Second
)

// errWatchClosed: the watch channel ended without saying why.
var errWatchClosed = errors.New("watch channel closed")

// load lists everything under the root at one revision and replaces the
// cache content with it. It returns that revision.
func (s *Store) load(ctx context.Context) (int64, error) {
	resp, err := s.cli.Get(ctx, s.keys.root, clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("etcdstore: list %s: %w", s.keys.root, err)
	}
	changes := make([]metadata.Change, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		ch, ok, err := s.keys.change(string(kv.Key), kv.Value, false)
		if err != nil {
			s.log.Error("skipping undecodable key", "err", err)
			continue
		}
		if ok {
			changes = append(changes, ch)
		}
	}
	s.cache.Load(resp.Header.Revision, changes)
	return resp.Header.Revision, nil
}

// watchLoop feeds the cache until ctx ends: watch from rev+1; when the
// watch breaks (compaction, lost leader, cancellation by the server),
// re-list with backoff and watch again from the new revision. While etcd
// is out of reach the cache keeps its last content (readers go on serving
// from it) and the re-list failures go to the outage log; the re-list
// that succeeds resynchronises it. It owns s.watchDone.
func (s *Store) watchLoop(ctx context.Context, rev int64) {
	defer close(s.watchDone)
	for {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := s.cli.Watch(wctx, s.keys.root, clientv3.WithPrefix(), clientv3.WithRev(rev+1))
		var err error
		rev, err = s.consume(wch, rev)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if unreachable(err) {
			s.outage.failed(err, time.Now())
		}
		s.log.Info("metadata watch broke; re-listing", "revision", rev, "err", err)
		backoff := relistMinBackoff
		for {
			if !sleepCtx(ctx, backoff) {
				return
			}
			began := time.Now()
			lctx, cancel := context.WithTimeout(ctx, relistTimeout)
			next, lerr := s.load(lctx)
			cancel()
			if lerr == nil {
				s.outage.ok(began)
				s.log.Info("metadata re-listed", "revision", next, "was", rev)
				rev = next
				break
			}
			if ctx.Err() != nil {
				return
			}
			s.retryFailed("metadata re-list failed", began, lerr, "retry_in", backoff)
			backoff = min(2*backoff, relistMaxBackoff)
		}
	}
}

// consume applies watch responses to the cache, one Apply per revision,
// until the watch ends. It returns the last revision applied and why the
// watch ended.
func (s *Store) consume(wch clientv3.WatchChan, rev int64) (int64, error) {
	for resp := range wch {
		if resp.CompactRevision != 0 {
			return rev, fmt.Errorf("revision %d compacted (now %d)", rev+1, resp.CompactRevision)
		}
		if err := resp.Err(); err != nil {
			return rev, err
		}
		if resp.Canceled {
			return rev, errWatchClosed
		}
		if resp.IsProgressNotify() {
			s.cache.Apply(resp.Header.Revision, nil)
			rev = max(rev, resp.Header.Revision)
			continue
		}
		var batch []metadata.Change
		for i, ev := range resp.Events {
			ch, ok, err := s.keys.change(string(ev.Kv.Key), ev.Kv.Value, ev.Type == clientv3.EventTypeDelete)
			if err != nil {
				s.log.Error("skipping undecodable key", "err", err)
			} else if ok {
				batch = append(batch, ch)
			}
			// Events come in revision order; one revision is one Apply.
			if evRev := ev.Kv.ModRevision; i == len(resp.Events)-1 || resp.Events[i+1].Kv.ModRevision != evRev {
				s.cache.Apply(evRev, batch)
				rev, batch = evRev, nil
			}
		}
	}
	return rev, errWatchClosed
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
