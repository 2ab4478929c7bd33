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
	})
}
