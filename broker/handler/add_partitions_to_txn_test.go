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
	runRows(t, tableOpts{codes: codes}, []apiRow[*kmsg.AddPartitionsToTxnResponse]{
		{
			name: "partitions join the producer's transaction", scene: txnScene, setup: ready,
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
			name: "a partition that does not exist", scene: txnScene, setup: ready,
			req:   add("tx", "t", 0, 7),
			codes: []int16{kerr.OperationNotAttempted.Code, kerr.UnknownTopicOrPartition.Code},
		},
		{
			name: "an unknown transactional id", scene: txnScene, setup: withTopic("t", 2, nil),
			req:   add("tx", "t", 0),
			codes: []int16{kerr.NotCoordinator.Code},
		},
	})
}
