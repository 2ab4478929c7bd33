package handler

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAddPartitionsToTxn(t *testing.T) {
	codes := func(r kmsg.Response) []int16 {
		var out []int16
		for _, rt := range r.(*kmsg.AddPartitionsToTxnResponse).Topics {
			for _, p := range rt.Partitions {
				out = append(out, p.ErrorCode)
			}
		}
		return out
	}
	add := func(id string, topic string, parts ...int32) func(*testing.T, *scene) kmsg.Request {
		return func(t *testing.T, s *scene) kmsg.Request {
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, -1, -1
			if s.env.Txn.Loaded(0) {
				req.ProducerID, req.ProducerEpoch = initTxn(t, s, id)
			}
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = topic, slices.Clone(parts)
			req.Topics = append(req.Topics, rt)
			return req
		}
	}
	ready := func(t *testing.T, s *scene) {
		withTopic("t", 2, nil)(t, s)
		withTxnCoordinator(t, s)
	}
	v03 := []int16{0, 3} // the clients' form; v4+ is the brokers' (TestAddPartitionsToTxnBatched)
	runRows(t, tableOpts{codes: codes}, []apiRow[*kmsg.AddPartitionsToTxnResponse]{
		{
			name: "partitions join the producer's transaction", versions: v03, scene: txnScene, setup: ready,
			req:   add("tx", "t", 0, 1),
			codes: []int16{0, 0},
			want: func(t *testing.T, s *scene, _ *kmsg.AddPartitionsToTxnResponse) {
				d, err := s.env.Txn.Describe("tx")
				if err != nil || len(d.Partitions) != 2 || d.State.String() != "Ongoing" {
					t.Fatalf("described %+v, %v; want Ongoing over 2 partitions", d, err)
				}
			},
		},
		{
			// Kafka's answer: nothing is added.
			name: "a partition that does not exist", versions: v03, scene: txnScene, setup: ready,
			req:   add("tx", "t", 0, 7),
			codes: []int16{kerr.OperationNotAttempted.Code, kerr.UnknownTopicOrPartition.Code},
		},
		{
			// Kafka's answer; the transaction does not open.
			name: "a topic that does not exist", versions: v03, scene: txnScene, setup: ready,
			req:   add("tx", "nope", 0),
			codes: []int16{kerr.UnknownTopicOrPartition.Code},
			want: func(t *testing.T, s *scene, _ *kmsg.AddPartitionsToTxnResponse) {
				if d, err := s.env.Txn.Describe("tx"); err != nil || d.State.String() != "Empty" || len(d.Partitions) != 0 {
					t.Fatalf("described %+v, %v; want Empty without partitions", d, err)
				}
			},
		},
		{
			name: "an unknown transactional id", versions: v03, scene: txnScene, setup: withTopic("t", 2, nil),
			req:   add("tx", "t", 0),
			codes: []int16{kerr.NotCoordinator.Code},
		},
	})
}

// TestAddPartitionsToTxnBatched: v4+, the form partition leaders send
// (KIP-890): several transactions in one request, each verified only or
// added, each answered on its own.
func TestAddPartitionsToTxnBatched(t *testing.T) {
	codes := func(r kmsg.Response) []int16 {
		var out []int16
		for _, tx := range r.(*kmsg.AddPartitionsToTxnResponse).Transactions {
			for _, rt := range tx.Topics {
				for _, p := range rt.Partitions {
					out = append(out, p.ErrorCode)
				}
			}
		}
		return out
	}
	type one struct {
		id       string
		verify   bool
		init     bool // InitProducerId first
		dEpoch   int16
		topic    string
		parts    []int32
		addFirst []int32 // added with v3 before the request
	}
	req := func(txs ...one) func(*testing.T, *scene) kmsg.Request {
		return func(t *testing.T, s *scene) kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			for _, o := range txs {
				rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
				rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = o.id, 99, 0, o.verify
				if o.init {
					rt.ProducerID, rt.ProducerEpoch = initTxn(t, s, o.id)
				}
				if len(o.addFirst) > 0 {
					add := kmsg.NewPtrAddPartitionsToTxnRequest()
					add.TransactionalID, add.ProducerID, add.ProducerEpoch = o.id, rt.ProducerID, rt.ProducerEpoch
					at := kmsg.NewAddPartitionsToTxnRequestTopic()
					at.Topic, at.Partitions = o.topic, o.addFirst
					add.Topics = append(add.Topics, at)
					s.send(t, add, 3)
				}
				rt.ProducerEpoch += o.dEpoch
				top := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				top.Topic, top.Partitions = o.topic, slices.Clone(o.parts)
				rt.Topics = append(rt.Topics, top)
				r.Transactions = append(r.Transactions, rt)
			}
			return r
		}
	}
	ready := func(t *testing.T, s *scene) {
		withTopic("t", 2, nil)(t, s)
		withTxnCoordinator(t, s)
	}
	partitionsOf := func(id string) func(*testing.T, *scene, *kmsg.AddPartitionsToTxnResponse) {
		return func(t *testing.T, s *scene, _ *kmsg.AddPartitionsToTxnResponse) {
			t.Helper()
			d, err := s.env.Txn.Describe(id)
			if err != nil || len(d.Partitions) != 2 || d.State.String() != "Ongoing" {
				t.Fatalf("described %+v, %v; want Ongoing over t-0 and t-1", d, err)
			}
		}
	}
	abortable, fenced := kerr.TransactionAbortable.Code, kerr.ProducerFenced.Code
	v45 := []int16{4, 5}
	runRows(t, tableOpts{codes: codes}, []apiRow[*kmsg.AddPartitionsToTxnResponse]{
		{
			name: "verify only: added and not", versions: v45, scene: txnScene, setup: ready,
			req:   req(one{id: "tx", verify: true, init: true, topic: "t", parts: []int32{0, 1}, addFirst: []int32{0}}),
			codes: []int16{0, abortable},
		},
		{
			// Verification changes nothing: t-1 is still not in it.
			name: "verify only adds nothing", versions: v45, scene: txnScene, setup: ready,
			req:   req(one{id: "tx", verify: true, init: true, topic: "t", parts: []int32{1}}),
			codes: []int16{abortable},
			want: func(t *testing.T, s *scene, _ *kmsg.AddPartitionsToTxnResponse) {
				if d, err := s.env.Txn.Describe("tx"); err != nil || len(d.Partitions) != 0 {
					t.Fatalf("described %+v, %v; want no partitions", d, err)
				}
			},
		},
		{
			name: "two transactions: one verified, one added", versions: v45, scene: txnScene, setup: ready,
			req: req(one{id: "a", verify: true, init: true, topic: "t", parts: []int32{0}, addFirst: []int32{0}},
				one{id: "b", init: true, topic: "t", parts: []int32{0, 1}}),
			codes: []int16{0, 0, 0},
			want:  partitionsOf("b"),
		},
		{
			name: "verify only: fenced, unknown, missing partition", versions: v45, scene: txnScene, setup: ready,
			req: req(one{id: "a", verify: true, init: true, dEpoch: -1, topic: "t", parts: []int32{0}},
				one{id: "b", verify: true, topic: "t", parts: []int32{0}},
				one{id: "c", verify: true, init: true, topic: "t", parts: []int32{0, 7}}),
			codes: []int16{fenced, kerr.InvalidProducerIDMapping.Code, kerr.OperationNotAttempted.Code, kerr.UnknownTopicOrPartition.Code},
		},
	})
}
