package etcdstore

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/metadata"
)

// The election's role semantics are in the conformance suite; these tests
// cover what only etcd can do: keys changed behind the store's back.

const testTTL = 5 * time.Second

// TestControllerKeys: a claim leaves the campaign key, the epoch counter
// and the controller record (attached to the session lease) as doc.go
// lays them out.
func TestControllerKeys(t *testing.T) {
	s := openStore(t)
	ctx := testCtx(t)
	tm, err := s.Campaign(ctx, 7, testTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	x := tm.(*term)
	if !strings.HasPrefix(x.fence.electionKey, s.keys.controllerElection()+"/") {
		t.Fatalf("campaign key %q outside %q", x.fence.electionKey, s.keys.controllerElection())
	}
	resp, err := s.cli.Get(ctx, s.keys.controllerEpoch())
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != strconv.Itoa(int(tm.Epoch())) {
		t.Fatalf("epoch key = %v, %v", resp, err)
	}
	resp, err = s.cli.Get(ctx, s.keys.controllerLeader())
	if err != nil || len(resp.Kvs) != 1 || clientv3.LeaseID(resp.Kvs[0].Lease) != x.sess.Lease() {
		t.Fatalf("controller record = %v, %v", resp, err)
	}
	if want := `{"id":7,"epoch":` + strconv.Itoa(int(tm.Epoch())) + `}`; string(resp.Kvs[0].Value) != want {
		t.Fatalf("controller record %s, want %s", resp.Kvs[0].Value, want)
	}
}

// TestTermEndsWhenCampaignKeyDeleted: an operator deleting the campaign
// key ends the term with ErrFenced although its session lives, and the
// next candidate is elected.
func TestTermEndsWhenCampaignKeyDeleted(t *testing.T) {
	s, other := openStore(t), openStore(t)
	ctx := testCtx(t)
	if _, err := s.CreateTopic(ctx, topicOf("t", 1, 1, 2)); err != nil {
		t.Fatal(err)
	}
	t1, err := s.Campaign(ctx, 1, testTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer t1.Close()
	elected := make(chan metadata.Term, 1)
	go func() {
		t2, err := other.Campaign(ctx, 2, testTTL)
		if err != nil {
			t.Errorf("second Campaign: %v", err)
		}
		elected <- t2
	}()
	if _, err := s.cli.Delete(ctx, t1.(*term).fence.electionKey); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, t1.Done(), "term over")
	if !errors.Is(t1.Err(), metadata.ErrFenced) {
		t.Fatalf("Err = %v, want ErrFenced", t1.Err())
	}
	next := part(1, 2)
	next.PartitionEpoch = 1
	if _, err := t1.CompareAndSetPartition(ctx, "t", 0, 0, next); !errors.Is(err, metadata.ErrFenced) {
		t.Fatalf("write after the key went: %v, want ErrFenced", err)
	}
	t2 := <-elected
	if t2 == nil {
		t.FailNow()
	}
	defer t2.Close()
	if t2.Epoch() <= t1.Epoch() {
		t.Fatalf("second epoch %d not above %d", t2.Epoch(), t1.Epoch())
	}
	// Closing the first term (revoking its lease) leaves the new record.
	if err := t1.Close(); err != nil {
		t.Fatal(err)
	}
	if info, _, err := other.controller(ctx); err != nil || info != (metadata.ControllerInfo{ID: 2, Epoch: t2.Epoch()}) {
		t.Fatalf("controller = %+v, %v", info, err)
	}
}

// TestTermFencedBySupersededEpoch: a write finds a newer controller epoch
// in etcd (as after a claim this term missed) and fails with ErrFenced,
// which ends the term.
func TestTermFencedBySupersededEpoch(t *testing.T) {
	s := openStore(t)
	ctx := testCtx(t)
	if _, err := s.CreateTopic(ctx, topicOf("t", 1, 1)); err != nil {
		t.Fatal(err)
	}
	tm, err := s.Campaign(ctx, 1, testTTL)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	if _, err := s.cli.Put(ctx, s.keys.controllerEpoch(), strconv.Itoa(int(tm.Epoch())+1)); err != nil {
		t.Fatal(err)
	}
	next := part(1)
	next.PartitionEpoch = 1
	if _, err := tm.CompareAndSetPartition(ctx, "t", 0, 0, next); !errors.Is(err, metadata.ErrFenced) {
		t.Fatalf("write of a superseded term: %v, want ErrFenced", err)
	}
	waitClosed(t, tm.Done(), "term over")
	if !errors.Is(tm.Err(), metadata.ErrFenced) {
		t.Fatalf("Err = %v, want ErrFenced", tm.Err())
	}
	if got, _ := s.Cache().Partition("t", 0); got.PartitionEpoch != 0 {
		t.Fatalf("fenced write changed the partition: %+v", got)
	}
}
