package handler

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeProducersReq(topic string, parts ...int32) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = topic, parts
		req.Topics = append(req.Topics, rt)
		return req
	}
}

func TestDescribeProducers(t *testing.T) {
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.DescribeProducersResponse]{
		{
			// openTxn: producer 5's transaction is open from offset 1.
			name: "an open transaction's producer", setup: openTxn, req: describeProducersReq("t", 0),
			want: func(t *testing.T, _ *scene, r *kmsg.DescribeProducersResponse) {
				ps := r.Topics[0].Partitions[0].ActiveProducers
				if len(ps) != 1 {
					t.Fatalf("producers %+v", ps)
				}
				if p := ps[0]; p.ProducerID != 5 || p.ProducerEpoch != 0 || p.LastSequence != 1 || p.CurrentTxnStartOffset != 1 || p.CoordinatorEpoch != -1 || p.LastTimestamp < 0 {
					t.Fatalf("producer %+v", p)
				}
			},
		},
		{
			name: "a committed transaction's producer", setup: steps(openTxn, withTxnEnd("t", 0, 5, true)), req: describeProducersReq("t", 0),
			want: func(t *testing.T, _ *scene, r *kmsg.DescribeProducersResponse) {
				if ps := r.Topics[0].Partitions[0].ActiveProducers; len(ps) != 1 || ps[0].CurrentTxnStartOffset != -1 {
					t.Fatalf("producers %+v", ps)
				}
			},
		},
		{
			name: "no producers", setup: withTopic("t", 1, nil), req: describeProducersReq("t", 0),
			want: func(t *testing.T, _ *scene, r *kmsg.DescribeProducersResponse) {
				if ps := r.Topics[0].Partitions[0].ActiveProducers; len(ps) != 0 {
					t.Fatalf("producers %+v", ps)
				}
			},
		},
		{
			name: "unknown topic", req: describeProducersReq("nope", 0),
			codes: []int16{kerr.UnknownTopicOrPartition.Code},
		},
		{
			name: "unknown partition", setup: withTopic("t", 1, nil), req: describeProducersReq("t", 0, 1),
			codes: []int16{0, kerr.UnknownTopicOrPartition.Code},
		},
		{
			name:  "follower",
			setup: steps(withPeer(2, nil), withAssignedTopic("t", map[int32][]int32{0: {2, 1}}, nil)),
			req:   describeProducersReq("t", 0),
			codes: []int16{kerr.NotLeaderForPartition.Code},
		},
	})
}
