package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/strata-broker/strata/metadata"
)

// The controller election: the etcd analogue of ZooKeeper's /controller
// and /controller_epoch. Candidates campaign with concurrency.Election
// under controller/election, each in a session whose lease the client
// keeps alive; the oldest campaign key wins. The winner claims the role
// (claimController), which bumps controller/epoch and writes
// controller/leader (attached to the session lease) in one txn guarded by
// its campaign key. Every write of the resulting term carries its fence,
// so a term that ended (lease expired, key deleted, a newer epoch
// claimed) changes nothing.

// controllerRecord is the value of controller/leader.
type controllerRecord struct {
	ID    int32 `json:"id"`
	Epoch int32 `json:"epoch"`
}

// fence identifies one controller term: the campaign key that won, its
// create revision, and the epoch claimed with it.
type fence struct {
	electionKey string
	electionRev int64
	epoch       int32
}

// cmps are the txn conditions that hold only during f's term. A nil fence
// adds none.
func (f *fence) cmps(k keys) []clientv3.Cmp {
	if f == nil {
		return nil
	}
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(f.electionKey), "=", f.electionRev),
		clientv3.Compare(clientv3.Value(k.controllerEpoch()), "=", strconv.FormatInt(int64(f.epoch), 10)),
	}
}

// gets are the reads a failed fenced txn's else branch starts with, so
// that check can tell a lost term from another failed condition.
func (f *fence) gets(k keys) []clientv3.Op {
	if f == nil {
		return nil
	}
	return []clientv3.Op{clientv3.OpGet(f.electionKey), clientv3.OpGet(k.controllerEpoch())}
}

// check inspects the responses of gets (the first two of resps) and
// returns metadata.ErrFenced when the term is over.
func (f *fence) check(k keys, resps []*pb.ResponseOp) error {
	if f == nil {
		return nil
	}
	if len(resps) < 2 {
		return fmt.Errorf("controller epoch %d: missing fence reads: %w", f.epoch, metadata.ErrFenced)
	}
	el := resps[0].GetResponseRange().GetKvs()
	if len(el) == 0 || el[0].CreateRevision != f.electionRev {
		return fmt.Errorf("controller epoch %d: campaign key %s is gone: %w", f.epoch, f.electionKey, metadata.ErrFenced)
	}
	ep := resps[1].GetResponseRange().GetKvs()
	if len(ep) == 0 || string(ep[0].Value) != strconv.FormatInt(int64(f.epoch), 10) {
		cur := "none"
		if len(ep) > 0 {
			cur = string(ep[0].Value)
		}
		return fmt.Errorf("controller epoch %d superseded by %s: %w", f.epoch, cur, metadata.ErrFenced)
	}
	return nil
}

// Campaign opens an election session with a lease of ttl (whole seconds,
// at least one), campaigns with concurrency.Election until elected, and
// claims the role. The session's lease is kept alive on the client's own
// context, so the term outlives ctx; Term.Close revokes it.
func (s *Store) Campaign(ctx context.Context, id int32, ttl time.Duration) (metadata.Term, error) {
	op := fmt.Sprintf("campaign for controller as broker %d", id)
	if err := s.checkOpen(op); err != nil {
		return nil, err
	}
	secs := max(int64((ttl+time.Second-1)/time.Second), 1)
	lease, err := s.cli.Grant(ctx, secs)
	if err != nil {
		return nil, s.opErr(op+": grant session lease", err)
	}
	sess, err := concurrency.NewSession(s.cli, concurrency.WithLease(lease.ID), concurrency.WithTTL(int(secs)))
	if err != nil {
		_ = s.revoke(lease.ID)
		return nil, s.opErr(op+": open session", err)
	}
	t := newTerm(s, sess)
	// The campaign ends with ctx or with the session.
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(t.ctx, func() { cancel(context.Cause(t.ctx)) })
	defer stop()
	el := concurrency.NewElection(sess, s.keys.controllerElection())
	if err := el.Campaign(cctx, strconv.FormatInt(int64(id), 10)); err != nil {
		if cause := context.Cause(cctx); cause != nil && ctx.Err() == nil {
			err = cause
		}
		_ = t.Close()
		return nil, s.opErr(op, err)
	}
	f, rev, err := s.claimController(cctx, el.Key(), el.Rev(), id, sess.Lease())
	if err != nil {
		_ = t.Close()
		return nil, s.opErr(op, err)
	}
	t.fence, t.rev = f, rev
	// The term also ends if the campaign key vanishes while the session
	// lives (an operator deleted it).
	t.wg.Go(func() { t.watchCampaignKey(f.electionKey, rev) })
	return t, nil
}

// opErr wraps a failed call, as metadata.ErrClosed once the store closed.
func (s *Store) opErr(op string, err error) error {
	if s.closed.Load() && !errors.Is(err, metadata.ErrClosed) {
		return fmt.Errorf("etcdstore: %s: %w (%v)", op, metadata.ErrClosed, err)
	}
	return writeErr(op, err)
}

// claimController records broker id as the controller after it won the
// election with the campaign key electionKey created at electionRev. In
// one txn guarded by that key it bumps the controller epoch and writes the
// controller record attached to lease (the campaign session's lease, so
// the record vanishes with the session). It fails with metadata.ErrFenced
// if the campaign key is gone, i.e. the win is already void.
func (s *Store) claimController(ctx context.Context, electionKey string, electionRev int64, id int32, lease clientv3.LeaseID) (fence, int64, error) {
	key := s.keys.controllerEpoch()
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return fence{}, 0, fmt.Errorf("claim: %w", err)
	}
	kvs := resp.Kvs
	for range maxCASAttempts {
		var cur, modRev int64
		if len(kvs) > 0 {
			modRev = kvs[0].ModRevision
			if cur, err = strconv.ParseInt(string(kvs[0].Value), 10, 32); err != nil || cur < 0 || cur == 1<<31-1 {
				return fence{}, 0, fmt.Errorf("claim: corrupt epoch %q at %s", kvs[0].Value, key)
			}
		}
		f := fence{electionKey: electionKey, electionRev: electionRev, epoch: int32(cur + 1)}
		rec := mustJSON(controllerRecord{ID: id, Epoch: f.epoch})
		tresp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(electionKey), "=", electionRev),
				clientv3.Compare(clientv3.ModRevision(key), "=", modRev)).
			Then(clientv3.OpPut(key, strconv.FormatInt(int64(f.epoch), 10)),
				clientv3.OpPut(s.keys.controllerLeader(), rec, clientv3.WithLease(lease))).
			Else(clientv3.OpGet(electionKey), clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return fence{}, 0, fmt.Errorf("claim: %w", err)
		}
		if tresp.Succeeded {
			return f, tresp.Header.Revision, nil
		}
		if el := tresp.Responses[0].GetResponseRange().GetKvs(); len(el) == 0 || el[0].CreateRevision != electionRev {
			return fence{}, 0, fmt.Errorf("claim: campaign key %s is gone: %w", electionKey, metadata.ErrFenced)
		}
		kvs = tresp.Responses[1].GetResponseRange().GetKvs()
	}
	return fence{}, 0, fmt.Errorf("claim: gave up after %d contended attempts", maxCASAttempts)
}

// term is the metadata.Term of one claimed election. Its goroutines (one
// ends the term with the session, one when the campaign key is deleted)
// are joined by Close.
type term struct {
	s     *Store
	sess  *concurrency.Session
	fence fence // set by Campaign before the term is handed out
	rev   int64

	ctx context.Context // done when the term is over; its cause is Err
	end context.CancelCauseFunc
	wg  sync.WaitGroup

	once     sync.Once
	closeErr error
}

func newTerm(s *Store, sess *concurrency.Session) *term {
	ctx, end := context.WithCancelCause(context.Background())
	t := &term{s: s, sess: sess, ctx: ctx, end: end}
	t.wg.Go(func() {
		select {
		case <-sess.Done():
			t.end(fmt.Errorf("%w: lease expired or etcd unreachable", metadata.ErrSessionLost))
		case <-ctx.Done():
		}
	})
	return t
}

// watchCampaignKey ends the term when key is deleted after rev, or when
// the watch breaks and so nothing proves the key is still there.
func (t *term) watchCampaignKey(key string, rev int64) {
	for wr := range t.s.cli.Watch(t.ctx, key, clientv3.WithRev(rev+1)) {
		if err := wr.Err(); err != nil || wr.Canceled {
			t.end(fmt.Errorf("%w: campaign key watch broke: %v", metadata.ErrSessionLost, err))
			return
		}
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypeDelete {
				t.end(t.keyGone(key))
				return
			}
		}
	}
	t.end(fmt.Errorf("%w: campaign key watch closed", metadata.ErrSessionLost))
}

// keyGone says why the campaign key went: with the session's lease (it
// expired or was revoked: the session is lost) or by itself (deleted by
// hand: the term is fenced).
func (t *term) keyGone(key string) error {
	ctx, cancel := context.WithTimeout(t.s.cli.Ctx(), revokeTimeout)
	defer cancel()
	if resp, err := t.s.cli.TimeToLive(ctx, t.sess.Lease()); err != nil || resp.TTL <= 0 {
		return fmt.Errorf("%w: campaign key %s went with the session lease", metadata.ErrSessionLost, key)
	}
	return fmt.Errorf("campaign key %s deleted: %w", key, metadata.ErrFenced)
}

func (t *term) Epoch() int32          { return t.fence.epoch }
func (t *term) Revision() int64       { return t.rev }
func (t *term) Done() <-chan struct{} { return t.ctx.Done() }

func (t *term) Err() error {
	if t.ctx.Err() == nil {
		return nil
	}
	return context.Cause(t.ctx)
}

// CompareAndSetPartition is the store's compare-and-set with the txn also
// guarded by the term's fence.
func (t *term) CompareAndSetPartition(ctx context.Context, topic string, partition, prevPartitionEpoch int32, next metadata.PartitionState) (int64, error) {
	if err := t.Err(); err != nil {
		return 0, fmt.Errorf("etcdstore: set partition %s-%d: controller epoch %d is over (%v): %w", topic, partition, t.fence.epoch, err, metadata.ErrFenced)
	}
	rev, err := t.s.casPartition(ctx, &t.fence, topic, partition, prevPartitionEpoch, next)
	if errors.Is(err, metadata.ErrFenced) {
		t.end(err)
	}
	return rev, err
}

// Close ends the term and revokes the session's lease, which deletes the
// campaign key and the controller record at once.
func (t *term) Close() error {
	t.once.Do(func() {
		t.end(fmt.Errorf("etcdstore: term closed: %w", metadata.ErrClosed))
		t.wg.Wait()
		if err := t.sess.Close(); err != nil && t.s.cli.Ctx().Err() == nil && !errors.Is(err, context.Canceled) {
			t.closeErr = fmt.Errorf("etcdstore: revoke controller session: %w", err)
		}
	})
	return t.closeErr
}

// controller reads the controller record; ID is metadata.NoController
// when no controller is elected. It also returns the revision read at.
func (s *Store) controller(ctx context.Context) (metadata.ControllerInfo, int64, error) {
	const op = "read controller"
	none := metadata.ControllerInfo{ID: metadata.NoController}
	if err := s.checkOpen(op); err != nil {
		return none, 0, err
	}
	resp, err := s.cli.Get(ctx, s.keys.controllerLeader())
	if err != nil {
		return none, 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	if len(resp.Kvs) == 0 {
		return none, resp.Header.Revision, nil
	}
	info, err := decodeController(resp.Kvs[0].Value)
	if err != nil {
		return none, 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	return info, resp.Header.Revision, nil
}

func decodeController(b []byte) (metadata.ControllerInfo, error) {
	var r controllerRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return metadata.ControllerInfo{ID: metadata.NoController}, fmt.Errorf("decode controller record: %w", err)
	}
	return metadata.ControllerInfo(r), nil
}

// WatchController follows controller/leader: a read, then a watch from
// the read's revision; when the watch breaks it re-reads with backoff.
// The goroutine behind it ends with ctx or the store.
func (s *Store) WatchController(ctx context.Context) <-chan metadata.ControllerInfo {
	out := make(chan metadata.ControllerInfo, 1)
	go s.watchController(ctx, out)
	return out
}

func (s *Store) watchController(ctx context.Context, out chan metadata.ControllerInfo) {
	defer close(out)
	publish := func(v metadata.ControllerInfo) {
		select { // drop an unread older value; this goroutine is the only sender
		case <-out:
		default:
		}
		out <- v
	}
	key, backoff := s.keys.controllerLeader(), relistMinBackoff
	for ctx.Err() == nil && !s.closed.Load() {
		info, rev, err := s.controller(ctx)
		if err == nil {
			publish(info)
			backoff = relistMinBackoff
			wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			for resp := range s.cli.Watch(wctx, key, clientv3.WithRev(rev+1)) {
				if resp.Err() != nil || resp.Canceled {
					break
				}
				for _, ev := range resp.Events {
					v := metadata.ControllerInfo{ID: metadata.NoController}
					if ev.Type == clientv3.EventTypePut {
						if v, err = decodeController(ev.Kv.Value); err != nil {
							s.log.Error("skipping undecodable controller record", "err", err)
							continue
						}
					}
					publish(v)
				}
			}
			cancel()
		} else if ctx.Err() == nil && !s.closed.Load() {
			s.log.Warn("controller watch: read failed", "err", err, "retry_in", backoff)
		}
		if !sleepCtx(ctx, backoff) {
			return
		}
		backoff = min(2*backoff, relistMaxBackoff)
	}
}
