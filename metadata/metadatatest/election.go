package metadatatest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
)

// campaignResult is the outcome of a Campaign run in a goroutine.
type campaignResult struct {
	term metadata.Term
	err  error
}

// campaign runs s.Campaign in a goroutine; the channel delivers its result.
func campaign(ctx context.Context, s metadata.Store, id int32) <-chan campaignResult {
	out := make(chan campaignResult, 1)
	go func() {
		term, err := s.Campaign(ctx, id, regTTL)
		out <- campaignResult{term, err}
	}()
	return out
}

// result waits for a campaign's outcome.
func result(t *testing.T, ch <-chan campaignResult, what string) campaignResult {
	t.Helper()
	timer := time.NewTimer(waitLimit)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r
	case <-timer.C:
		t.Fatalf("timed out waiting for %s", what)
		return campaignResult{}
	}
}

// testElectionAndFencing: two candidates, one term at a time; when the
// first term's session expires the second candidate is elected with a
// higher epoch, the deposed term's writes fail with ErrFenced while the
// new term's succeed, and the record observers see follows along.
func testElectionAndFencing(t *testing.T, cl Cluster) {
	a, b := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	watch := b.WatchController(ctx)
	waitController(t, watch, metadata.ControllerInfo{ID: metadata.NoController})
	if _, err := a.CreateTopic(ctx, TopicOf("t", 1, 1, 2)); err != nil {
		t.Fatal(err)
	}

	t1, err := a.Campaign(ctx, 1, regTTL)
	if err != nil {
		t.Fatalf("first Campaign: %v", err)
	}
	defer t1.Close()
	if t1.Epoch() < 1 || t1.Revision() <= 0 || t1.Err() != nil || metadata.IsClosed(t1.Done()) {
		t.Fatalf("first term: epoch %d revision %d err %v", t1.Epoch(), t1.Revision(), t1.Err())
	}
	waitController(t, watch, metadata.ControllerInfo{ID: 1, Epoch: t1.Epoch()})
	second := campaign(ctx, b, 2)

	next := Part(1, 2)
	next.PartitionEpoch = 1
	rev, err := t1.CompareAndSetPartition(ctx, "t", 0, 0, next)
	if err != nil {
		t.Fatalf("write in the current term: %v", err)
	}
	if got, _ := a.Cache().Partition("t", 0); got.PartitionEpoch != 1 || a.Cache().Revision() < rev {
		t.Fatalf("term's write not visible: %+v", got)
	}
	select {
	case r := <-second:
		t.Fatalf("second candidate elected while the first term lasts: %+v", r)
	default:
	}

	// The first term's session expires: the second candidate takes over.
	cl.ExpireSession(t, t1)
	WaitClosed(t, t1.Done(), "first term over")
	if !errors.Is(t1.Err(), metadata.ErrSessionLost) {
		t.Fatalf("first term's Err = %v, want ErrSessionLost", t1.Err())
	}
	r := result(t, second, "second candidate elected")
	if r.err != nil {
		t.Fatalf("second Campaign: %v", r.err)
	}
	t2 := r.term
	defer t2.Close()
	if t2.Epoch() <= t1.Epoch() {
		t.Fatalf("second epoch %d not above %d", t2.Epoch(), t1.Epoch())
	}
	waitController(t, watch, metadata.ControllerInfo{ID: 2, Epoch: t2.Epoch()})
	if err := b.Cache().WaitRevision(ctx, t2.Revision()); err != nil {
		t.Fatal(err)
	}

	next.PartitionEpoch = 2
	if _, err := t1.CompareAndSetPartition(ctx, "t", 0, 1, next); !errors.Is(err, metadata.ErrFenced) {
		t.Fatalf("deposed term's write: %v, want ErrFenced", err)
	}
	if got, _ := b.Cache().Partition("t", 0); got.PartitionEpoch != 1 {
		t.Fatalf("fenced write changed the partition: %+v", got)
	}
	// The current term still reports a stale epoch as such.
	if _, err := t2.CompareAndSetPartition(ctx, "t", 0, 0, next); !errors.Is(err, metadata.ErrStaleEpoch) {
		t.Fatalf("stale write of the current term: %v, want ErrStaleEpoch", err)
	}
	if _, err := t2.CompareAndSetPartition(ctx, "t", 0, 1, next); err != nil {
		t.Fatalf("write of the current term: %v", err)
	}

	// Close withdraws: the record vanishes and the term's writes are fenced.
	if err := t2.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := t2.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	WaitClosed(t, t2.Done(), "closed term over")
	if !errors.Is(t2.Err(), metadata.ErrClosed) {
		t.Fatalf("closed term's Err = %v, want ErrClosed", t2.Err())
	}
	waitController(t, watch, metadata.ControllerInfo{ID: metadata.NoController})
	next3 := next.Clone()
	next3.PartitionEpoch = 3
	if _, err := t2.CompareAndSetPartition(ctx, "t", 0, 2, next3); !errors.Is(err, metadata.ErrFenced) {
		t.Fatalf("closed term's write: %v, want ErrFenced", err)
	}
	// Unfenced writes are not affected by the election.
	if _, err := b.CompareAndSetPartition(ctx, "t", 0, 2, next3); err != nil {
		t.Fatalf("unfenced write: %v", err)
	}
	// The next candidate is elected at once, with the next epoch.
	t3, err := a.Campaign(ctx, 3, regTTL)
	if err != nil {
		t.Fatalf("third Campaign: %v", err)
	}
	defer t3.Close()
	if t3.Epoch() != t2.Epoch()+1 {
		t.Fatalf("third epoch %d, want %d", t3.Epoch(), t2.Epoch()+1)
	}
	waitController(t, watch, metadata.ControllerInfo{ID: 3, Epoch: t3.Epoch()})
}

// testCampaignCanceled: cancelling a waiting campaign withdraws it, so it
// holds up nobody once the leader goes.
func testCampaignCanceled(t *testing.T, cl Cluster) {
	a, b := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	t1, err := a.Campaign(ctx, 1, regTTL)
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	waiting := campaign(cctx, b, 2)
	cancel()
	if r := result(t, waiting, "cancelled campaign"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled Campaign = %+v, want context.Canceled", r)
	}
	if err := t1.Close(); err != nil {
		t.Fatal(err)
	}
	t3, err := b.Campaign(ctx, 3, regTTL)
	if err != nil {
		t.Fatalf("Campaign after the leader closed: %v", err)
	}
	defer t3.Close()
	if t3.Epoch() != t1.Epoch()+1 {
		t.Fatalf("epoch %d after %d: the cancelled candidate claimed one", t3.Epoch(), t1.Epoch())
	}
}

// testWatchControllerEndsWithStore: the watch channel closes when the
// handle closes.
func testWatchControllerEndsWithStore(t *testing.T, cl Cluster) {
	s := cl.Open(t)
	watch := s.WatchController(testCtx(t))
	waitController(t, watch, metadata.ControllerInfo{ID: metadata.NoController})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	timer := time.NewTimer(waitLimit)
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
