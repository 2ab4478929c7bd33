package etcdstore

import (
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/metadata"
)

// campaignKey stands in for a concurrency.Election campaign key: a key
// under the election prefix attached to a fresh lease.
func campaignKey(t *testing.T, s *Store, name string) (string, int64, clientv3.LeaseID) {
	t.Helper()
	ctx := testCtx(t)
	lease, err := s.Client().Grant(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	key := s.ControllerElectionPrefix() + "/" + name
	resp, err := s.Client().Put(ctx, key, name, clientv3.WithLease(lease.ID))
	if err != nil {
		t.Fatal(err)
	}
	return key, resp.Header.Revision, lease.ID
}

// TestControllerClaimAndFence: each claim bumps the epoch and publishes
// the record; a write fenced by a superseded or vanished term fails with
// ErrFenced and changes nothing, while the current term's write lands.
func TestControllerClaimAndFence(t *testing.T) {
	s := openStore(t)
	ctx := testCtx(t)
	watch := s.WatchController(ctx)
	if info := <-watch; info.ID != NoController {
		t.Fatalf("initial controller %+v", info)
	}
	if _, err := s.CreateTopic(ctx, topicOf("t", 1, 1, 2)); err != nil {
		t.Fatal(err)
	}

	k1, rev1, lease1 := campaignKey(t, s, "a")
	f1, _, err := s.ClaimController(ctx, k1, rev1, 1, lease1)
	if err != nil || f1.Epoch != 1 {
		t.Fatalf("first claim = %+v, %v", f1, err)
	}
	if info := <-watch; info != (ControllerInfo{ID: 1, Epoch: 1}) {
		t.Fatalf("watched %+v", info)
	}
	next := part(1, 2)
	next.PartitionEpoch = 1
	if _, err := s.CompareAndSetPartitionFenced(ctx, f1, "t", 0, 0, next); err != nil {
		t.Fatalf("write in the current term: %v", err)
	}

	// A second claimant (as after the first one's lease expired) supersedes it.
	k2, rev2, lease2 := campaignKey(t, s, "b")
	f2, _, err := s.ClaimController(ctx, k2, rev2, 2, lease2)
	if err != nil || f2.Epoch != 2 {
		t.Fatalf("second claim = %+v, %v", f2, err)
	}
	if info := <-watch; info != (ControllerInfo{ID: 2, Epoch: 2}) {
		t.Fatalf("watched %+v", info)
	}
	next.PartitionEpoch = 2
	if _, err := s.CompareAndSetPartitionFenced(ctx, f1, "t", 0, 1, next); !errors.Is(err, ErrFenced) {
		t.Fatalf("superseded term's write: %v, want ErrFenced", err)
	}
	if got, _, err := s.Controller(ctx); err != nil || got.ID != 2 {
		t.Fatalf("Controller = %+v, %v", got, err)
	}

	// The campaign key going (lease revoked) ends the term too, and the
	// record attached to that lease vanishes.
	if _, err := s.Client().Revoke(ctx, lease2); err != nil {
		t.Fatal(err)
	}
	if info := <-watch; info.ID != NoController {
		t.Fatalf("watched %+v after revoke", info)
	}
	if _, err := s.CompareAndSetPartitionFenced(ctx, f2, "t", 0, 1, next); !errors.Is(err, ErrFenced) {
		t.Fatalf("ended term's write: %v, want ErrFenced", err)
	}
	if _, _, err := s.ClaimController(ctx, k2, rev2, 2, lease2); !errors.Is(err, ErrFenced) {
		t.Fatalf("claim with a vanished campaign key: %v, want ErrFenced", err)
	}
	if got, _ := s.Cache().Partition("t", 0); got.PartitionEpoch != 1 {
		t.Fatalf("fenced writes changed the partition: %+v", got)
	}
	// Unfenced compare-and-set keeps working, and the fenced one still
	// reports a stale epoch as such.
	k3, rev3, lease3 := campaignKey(t, s, "c")
	f3, _, err := s.ClaimController(ctx, k3, rev3, 3, lease3)
	if err != nil || f3.Epoch != 3 {
		t.Fatalf("third claim = %+v, %v", f3, err)
	}
	if _, err := s.CompareAndSetPartitionFenced(ctx, f3, "t", 0, 0, next); !errors.Is(err, metadata.ErrStaleEpoch) {
		t.Fatalf("stale fenced write: %v, want ErrStaleEpoch", err)
	}
	if _, err := s.CompareAndSetPartition(ctx, "t", 0, 1, next); err != nil {
		t.Fatalf("unfenced write: %v", err)
	}
}

// TestWatchControllerEndsWithStore: the watch channel closes when the
// store closes.
func TestWatchControllerEndsWithStore(t *testing.T) {
	s, err := Open(testCtx(t), shared.Endpoints(), prefixFor(t), testLogger())
	if err != nil {
		t.Fatal(err)
	}
	watch := s.WatchController(testCtx(t))
	<-watch
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-watch:
			if !ok {
				return
			}
		case <-timer.C:
			t.Fatal("watch still open after Close")
		}
	}
}
