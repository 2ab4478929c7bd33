package handler

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/txn"
)

// txnScene is a scene whose __transaction_state has one partition, so
// that its creation and load stay small.
var txnScene = sceneOpts{config: map[string]string{"transaction.state.log.num.partitions": "1"}}

// withTxnCoordinator creates __transaction_state (through FindCoordinator
// of a transaction key) and waits until this broker coordinates it.
func withTxnCoordinator(t *testing.T, s *scene) {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey = 1, "txn"
	if resp := s.send(t, req, 3).(*kmsg.FindCoordinatorResponse); resp.ErrorCode != 0 {
		t.Fatalf("find transaction coordinator: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	for i := 0; !s.env.Txn.Loaded(0); i++ {
		if i == 1000 {
			tp, _ := s.env.Cache.Topic(txn.TopicName)
			t.Fatalf("%s-0 not loaded within 1000 rounds: led %v, topic %+v", txn.TopicName, s.env.Txn.Led(), tp)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// initTxnReq is an InitProducerId of transactional id id.
func initTxnReq(id string) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(id)
		req.TransactionTimeoutMillis = 60000
		return req
	}
}

// initTxn runs InitProducerId for id and returns the producer.
func initTxn(t *testing.T, s *scene, id string) (int64, int16) {
	t.Helper()
	resp := s.send(t, initTxnReq(id)(t, s), 4).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("init producer id of %s: %v", id, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// waitRound is one round of a bounded wait, on the synctest clock.
func waitRound() { time.Sleep(10 * time.Millisecond) }
