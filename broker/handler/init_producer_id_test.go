package handler

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type initProducerIDRow = apiRow[*kmsg.InitProducerIDResponse]

func TestInitProducerID(t *testing.T) {
	runRows(t, tableOpts{}, initProducerIDRows())
}

func initProducerIDRows() []initProducerIDRow {
	idempotent := func(*testing.T, *scene) kmsg.Request { return kmsg.NewPtrInitProducerIDRequest() }
	return []initProducerIDRow{
		{
			name: "an idempotent producer gets an id at epoch 0",
			req:  idempotent,
			want: wantProducerID(0),
		},
		{
			name: "each request gets a new id",
			req:  idempotent,
			want: checks(wantProducerID(0), wantFreshIDs(func(s *scene) *testBroker { return s.testBroker })),
		},
		{
			// Ids come from blocks reserved in the metadata store.
			name:  "brokers sharing the metadata store hand out different ids",
			setup: withPeer(2, nil),
			req:   idempotent,
			want:  checks(wantProducerID(0), wantFreshIDs(func(s *scene) *testBroker { return s.brokers[1] })),
		},
		{
			// Kafka's answer before __transaction_state exists: the client
			// finds the coordinator first, which creates it.
			name: "transactional id without a transaction coordinator",
			req:  initTxnReq("txn"),
			want: wantProducerID(kerr.NotCoordinator.Code),
		},
		{
			name:  "a new transactional id gets an id at epoch 0 from its coordinator",
			scene: txnScene,
			setup: withTxnCoordinator,
			req:   initTxnReq("txn"),
			want:  wantProducerID(0),
		},
		{
			name:  "a transaction timeout beyond transaction.max.timeout.ms",
			scene: txnScene,
			setup: withTxnCoordinator,
			req: func(t *testing.T, s *scene) kmsg.Request {
				req := initTxnReq("txn")(t, s).(*kmsg.InitProducerIDRequest)
				req.TransactionTimeoutMillis = 1 << 30
				return req
			},
			want: wantProducerID(kerr.InvalidTransactionTimeout.Code),
		},
		{
			// Kafka's answer while no id block can be had (RPCProducerIdManager):
			// retriable, and not fatal to older clients as a timeout is.
			name: "no id block to be had",
			setup: func(t *testing.T, s *scene) {
				s.env.Store = noProducerIDs{s.env.Store}
			},
			req:  idempotent,
			want: wantProducerID(kerr.CoordinatorLoadInProgress.Code),
		},
	}
}

// noProducerIDs is a metadata store that cannot reserve producer ids, as
// when etcd cannot be reached.
type noProducerIDs struct{ Store }

func (noProducerIDs) AllocateProducerIDs(context.Context, int64) (int64, error) {
	return 0, errors.New("etcd unreachable")
}

// wantProducerID checks the error code and, without one, a producer id at
// epoch 0; with one, id and epoch -1.
func wantProducerID(code int16) check[*kmsg.InitProducerIDResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.InitProducerIDResponse) {
		t.Helper()
		ok := resp.ProducerID >= 0 && resp.ProducerEpoch == 0
		if code != 0 {
			ok = resp.ProducerID == -1 && resp.ProducerEpoch == -1
		}
		if resp.ErrorCode != code || !ok {
			t.Errorf("error %d, producer id %d, epoch %d; want error %d", resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch, code)
		}
	}
}

// wantFreshIDs checks that further ids, from broker 1 and the broker
// other names, all differ from the answer's.
func wantFreshIDs(other func(s *scene) *testBroker) check[*kmsg.InitProducerIDResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.InitProducerIDResponse) {
		t.Helper()
		seen := map[int64]bool{resp.ProducerID: true}
		for _, b := range []*testBroker{other(s), s.testBroker, other(s)} {
			next := b.do(t, kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse)
			if next.ErrorCode != 0 || seen[next.ProducerID] {
				t.Fatalf("broker %d: error %d, producer id %d; ids so far %v", b.env.cfg().NodeID, next.ErrorCode, next.ProducerID, seen)
			}
			seen[next.ProducerID] = true
		}
	}
}
