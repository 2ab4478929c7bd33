package handler

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestEndTxn(t *testing.T) {
	codes := func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.EndTxnResponse).ErrorCode} }
	// end initialises id's producer, opens a transaction over t-0 unless
	// empty, and ends it.
	end := func(commit, empty bool) func(*testing.T, *scene) kmsg.Request {
		return func(t *testing.T, s *scene) kmsg.Request {
			pid, epoch := initTxn(t, s, "tx")
			if !empty {
				add := kmsg.NewPtrAddPartitionsToTxnRequest()
				add.TransactionalID, add.ProducerID, add.ProducerEpoch = "tx", pid, epoch
				rt := kmsg.NewAddPartitionsToTxnRequestTopic()
				rt.Topic, rt.Partitions = "t", []int32{0}
				add.Topics = append(add.Topics, rt)
				if c := s.send(t, add, 3).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; c != 0 {
					t.Fatalf("add partitions: %v", kerr.ErrorForCode(c))
				}
			}
			req := kmsg.NewPtrEndTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "tx", pid, epoch, commit
			return req
		}
	}
	ready := func(t *testing.T, s *scene) {
		withTopic("t", 1, nil)(t, s)
		withTxnCoordinator(t, s)
	}
	// wantMarker waits for the transaction to complete, its marker
	// appended to t-0.
	wantMarker := func(t *testing.T, s *scene, _ *kmsg.EndTxnResponse) {
		for i := 0; s.part(t, "t", 0).Log().LogEndOffset() != 1; i++ {
			if i == 1000 {
				t.Fatal("no marker on t-0 within 1000 rounds")
			}
			waitRound()
		}
	}
	runRows(t, tableOpts{codes: codes}, []apiRow[*kmsg.EndTxnResponse]{
		{name: "commit", scene: txnScene, setup: ready, req: end(true, false), want: wantMarker},
		{name: "abort", scene: txnScene, setup: ready, req: end(false, false), want: wantMarker},
		{name: "nothing to end", scene: txnScene, setup: ready, req: end(true, true), codes: []int16{kerr.InvalidTxnState.Code}},
		{
			// Kafka: an id without InitProducerId; nothing changes.
			name: "an unknown transactional id", scene: txnScene, setup: ready,
			req: func(*testing.T, *scene) kmsg.Request {
				req := kmsg.NewPtrEndTxnRequest()
				req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "nobody", 5, 0, true
				return req
			},
			codes: []int16{kerr.InvalidProducerIDMapping.Code},
			want: func(t *testing.T, s *scene, r *kmsg.EndTxnResponse) {
				if _, err := s.env.Txn.Describe("nobody"); err == nil {
					t.Error("the unknown id now exists")
				}
				if r.ProducerID != -1 || r.ProducerEpoch != -1 {
					t.Errorf("producer %d/%d, want -1/-1", r.ProducerID, r.ProducerEpoch)
				}
			},
		},
		// v5 (transaction version 2): every end bumps the epoch.
		{name: "v5 commit bumps the epoch", versions: []int16{5}, scene: txnScene, setup: ready, req: end(true, false), want: checks(wantMarker, wantBumped(1))},
		{name: "v5 abort with nothing open bumps it", versions: []int16{5}, scene: txnScene, setup: ready, req: end(false, true), want: wantBumped(1)},
		{
			// The retry carries the epoch before the bump and is answered
			// with the bumped one; nothing is logged again.
			name: "v5 retried commit", versions: []int16{5}, scene: txnScene, setup: ready,
			req: func(t *testing.T, s *scene) kmsg.Request {
				req := end(true, false)(t, s).(*kmsg.EndTxnRequest)
				if c := s.send(t, req, 5).(*kmsg.EndTxnResponse).ErrorCode; c != 0 {
					t.Fatalf("first commit: %v", kerr.ErrorForCode(c))
				}
				// Until the commit completes, a retry is CONCURRENT_TRANSACTIONS.
				for i := 0; ; i++ {
					if d, err := s.env.Txn.Describe("tx"); err == nil && d.State.String() == "CompleteCommit" {
						break
					}
					if i == 1000 {
						t.Fatal("the commit did not complete within 1000 rounds")
					}
					waitRound()
				}
				return req
			},
			want: checks(wantBumped(1), func(t *testing.T, s *scene, _ *kmsg.EndTxnResponse) {
				if leo := s.part(t, "t", 0).Log().LogEndOffset(); leo != 1 {
					t.Errorf("log end %d, want 1: the retry wrote another marker", leo)
				}
			}),
		},
		{
			// A version 0-1 end keeps the epoch and answers no producer.
			name: "v4 commit keeps the epoch", versions: []int16{4}, scene: txnScene, setup: ready, req: end(true, false), want: wantBumped(0),
		},
	})
}

// wantBumped checks the answer's producer: "tx"'s at epoch d (InitProducerId
// of a new id gives epoch 0, each v5 end bumps it), or -1/-1 when d is 0
// (no producer answered).
func wantBumped(d int16) check[*kmsg.EndTxnResponse] {
	return func(t *testing.T, s *scene, r *kmsg.EndTxnResponse) {
		t.Helper()
		desc, err := s.env.Txn.Describe("tx")
		if err != nil {
			t.Fatal(err)
		}
		if d == 0 {
			if r.ProducerID != -1 || r.ProducerEpoch != -1 {
				t.Errorf("producer %d/%d, want -1/-1", r.ProducerID, r.ProducerEpoch)
			}
			return
		}
		if r.ProducerID != desc.ProducerID || r.ProducerEpoch != d || desc.ProducerEpoch != d {
			t.Errorf("producer %d/%d (coordinator's %d/%d), want epoch %d", r.ProducerID, r.ProducerEpoch, desc.ProducerID, desc.ProducerEpoch, d)
		}
	}
}
