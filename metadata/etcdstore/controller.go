package etcdstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/metadata"
)

// The controller's records: the etcd analogue of ZooKeeper's /controller
// and /controller_epoch. Controllers campaign with concurrency.Election
// under ControllerElectionPrefix; the winner claims the role with
// ClaimController, which bumps controller/epoch and writes
// controller/leader in one txn guarded by its campaign key. Every later
// controller write carries the resulting Fence, so a controller whose
// term ended (lease expired, key deleted, a newer epoch claimed) changes
// nothing.

// ErrFenced: a write carrying a Fence failed because that controller term
// is over (its campaign key is gone or a newer epoch was claimed).
var ErrFenced = errors.New("etcdstore: fenced: the controller term is over")

// NoController is ControllerInfo.ID while no controller is elected.
const NoController int32 = -1

// ControllerInfo is the elected controller as recorded in etcd.
type ControllerInfo struct {
	ID    int32 // broker id of the controller; NoController if none
	Epoch int32 // controller epoch of its term (0 when none)
}

// controllerRecord is the value of controller/leader.
type controllerRecord struct {
	ID    int32 `json:"id"`
	Epoch int32 `json:"epoch"`
}

// Fence identifies one controller term: the campaign key that won, its
// create revision, and the epoch claimed with it. A zero Fence never
// matches.
type Fence struct {
	ElectionKey string
	ElectionRev int64
	Epoch       int32
}

// cmps are the txn conditions that hold only during f's term. A nil fence
// adds none.
func (f *Fence) cmps(k keys) []clientv3.Cmp {
	if f == nil {
		return nil
	}
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(f.ElectionKey), "=", f.ElectionRev),
		clientv3.Compare(clientv3.Value(k.controllerEpoch()), "=", strconv.FormatInt(int64(f.Epoch), 10)),
	}
}

// gets are the reads a failed fenced txn's else branch starts with, so
// that check can tell a lost term from another failed condition.
func (f *Fence) gets(k keys) []clientv3.Op {
	if f == nil {
		return nil
	}
	return []clientv3.Op{clientv3.OpGet(f.ElectionKey), clientv3.OpGet(k.controllerEpoch())}
}

// check inspects the responses of gets (the first two of resps) and
// returns ErrFenced when the term is over.
func (f *Fence) check(k keys, resps []*pb.ResponseOp) error {
	if f == nil {
		return nil
	}
	if len(resps) < 2 {
		return fmt.Errorf("controller epoch %d: missing fence reads: %w", f.Epoch, ErrFenced)
	}
	el := resps[0].GetResponseRange().GetKvs()
	if len(el) == 0 || el[0].CreateRevision != f.ElectionRev {
		return fmt.Errorf("controller epoch %d: campaign key %s is gone: %w", f.Epoch, f.ElectionKey, ErrFenced)
	}
	ep := resps[1].GetResponseRange().GetKvs()
	if len(ep) == 0 || string(ep[0].Value) != strconv.FormatInt(int64(f.Epoch), 10) {
		cur := "none"
		if len(ep) > 0 {
			cur = string(ep[0].Value)
		}
		return fmt.Errorf("controller epoch %d superseded by %s: %w", f.Epoch, cur, ErrFenced)
	}
	return nil
}

// ControllerElectionPrefix is the key prefix to pass to
// concurrency.NewElection; campaign keys live below it.
func (s *Store) ControllerElectionPrefix() string { return s.keys.controllerElection() }

// ClaimController records broker id as the controller after it won the
// election with the campaign key electionKey created at electionRev. In
// one txn guarded by that key it bumps the controller epoch and writes the
// controller record attached to lease (the campaign session's lease, so
// the record vanishes with the session). It fails with ErrFenced if the
// campaign key is gone, i.e. the win is already void.
func (s *Store) ClaimController(ctx context.Context, electionKey string, electionRev int64, id int32, lease clientv3.LeaseID) (Fence, int64, error) {
	op := fmt.Sprintf("claim controller for broker %d", id)
	if err := s.checkOpen(op); err != nil {
		return Fence{}, 0, err
	}
	key := s.keys.controllerEpoch()
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return Fence{}, 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	kvs := resp.Kvs
	for range maxCASAttempts {
		var cur, modRev int64
		if len(kvs) > 0 {
			modRev = kvs[0].ModRevision
			if cur, err = strconv.ParseInt(string(kvs[0].Value), 10, 32); err != nil || cur < 0 || cur == 1<<31-1 {
				return Fence{}, 0, fmt.Errorf("etcdstore: %s: corrupt epoch %q at %s", op, kvs[0].Value, key)
			}
		}
		f := Fence{ElectionKey: electionKey, ElectionRev: electionRev, Epoch: int32(cur + 1)}
		rec := mustJSON(controllerRecord{ID: id, Epoch: f.Epoch})
		tresp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(electionKey), "=", electionRev),
				clientv3.Compare(clientv3.ModRevision(key), "=", modRev)).
			Then(clientv3.OpPut(key, strconv.FormatInt(int64(f.Epoch), 10)),
				clientv3.OpPut(s.keys.controllerLeader(), rec, clientv3.WithLease(lease))).
			Else(clientv3.OpGet(electionKey), clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return Fence{}, 0, fmt.Errorf("etcdstore: %s: %w", op, err)
		}
		if tresp.Succeeded {
			return f, tresp.Header.Revision, nil
		}
		if el := tresp.Responses[0].GetResponseRange().GetKvs(); len(el) == 0 || el[0].CreateRevision != electionRev {
			return Fence{}, 0, fmt.Errorf("etcdstore: %s: campaign key %s is gone: %w", op, electionKey, ErrFenced)
		}
		kvs = tresp.Responses[1].GetResponseRange().GetKvs()
	}
	return Fence{}, 0, fmt.Errorf("etcdstore: %s: gave up after %d contended attempts", op, maxCASAttempts)
}

// CompareAndSetPartitionFenced is CompareAndSetPartition for the
// controller: the txn also requires fence's term to be current, and fails
// with ErrFenced when it is not.
func (s *Store) CompareAndSetPartitionFenced(ctx context.Context, fence Fence, topic string, partition, prevPartitionEpoch int32, next metadata.PartitionState) (int64, error) {
	return s.casPartition(ctx, &fence, topic, partition, prevPartitionEpoch, next)
}

// Controller reads the controller record; ID is NoController when no
// controller is elected. It also returns the revision read at.
func (s *Store) Controller(ctx context.Context) (ControllerInfo, int64, error) {
	const op = "read controller"
	if err := s.checkOpen(op); err != nil {
		return ControllerInfo{ID: NoController}, 0, err
	}
	resp, err := s.cli.Get(ctx, s.keys.controllerLeader())
	if err != nil {
		return ControllerInfo{ID: NoController}, 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	if len(resp.Kvs) == 0 {
		return ControllerInfo{ID: NoController}, resp.Header.Revision, nil
	}
	info, err := decodeController(resp.Kvs[0].Value)
	if err != nil {
		return ControllerInfo{ID: NoController}, 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	return info, resp.Header.Revision, nil
}

func decodeController(b []byte) (ControllerInfo, error) {
	var r controllerRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return ControllerInfo{ID: NoController}, fmt.Errorf("decode controller record: %w", err)
	}
	return ControllerInfo(r), nil
}

// WatchController delivers the controller record: the current value at
// once, then every change, until ctx ends or the store closes (then the
// channel is closed). Only the newest value waits in the channel; a slow
// reader skips intermediate ones. When the watch breaks it re-reads with
// backoff. The goroutine behind it ends with ctx or the store.
func (s *Store) WatchController(ctx context.Context) <-chan ControllerInfo {
	out := make(chan ControllerInfo, 1)
	go s.watchController(ctx, out)
	return out
}

func (s *Store) watchController(ctx context.Context, out chan ControllerInfo) {
	defer close(out)
	publish := func(v ControllerInfo) {
		select { // drop an unread older value; this goroutine is the only sender
		case <-out:
		default:
		}
		out <- v
	}
	key, backoff := s.keys.controllerLeader(), relistMinBackoff
	for ctx.Err() == nil && !s.closed.Load() {
		info, rev, err := s.Controller(ctx)
		if err == nil {
			publish(info)
			backoff = relistMinBackoff
			wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
			for resp := range s.cli.Watch(wctx, key, clientv3.WithRev(rev+1)) {
				if resp.Err() != nil || resp.Canceled {
					break
				}
				for _, ev := range resp.Events {
					v := ControllerInfo{ID: NoController}
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
