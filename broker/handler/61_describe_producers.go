package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeProducers: v0
//
// Behavior:
// * Each partition is described by its leader from its producer state
//   (tier/producer): every producer id it still tracks, with its epoch,
//   the last sequence and timestamp of its newest batch (or marker), the
//   coordinator epoch of its last marker and the first offset of its
//   ongoing transaction (-1 where there is none), as Kafka's
//   ReplicaManager.activeProducerState.
// * A partition led elsewhere is NOT_LEADER_OR_FOLLOWER, an unknown topic
//   or partition UNKNOWN_TOPIC_OR_PARTITION.
// * Each topic needs READ (TOPIC_AUTHORIZATION_FAILED), as in Kafka.

func handleDescribeProducers(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DescribeProducersRequest)
	resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		t, tok := env.Cache.Topic(rt.Topic)
		denied := !env.allowedTopic(req, aclRead, rt.Topic)
		for _, idx := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = idx
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, _, code := env.leaderPartition(t, tok, idx, false)
			if sp.ErrorCode = code; code == 0 {
				for _, a := range p.Log().Producers() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = a.ProducerID, int32(a.Epoch), a.LastSequence
					ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = a.LastTimestamp, a.CoordinatorEpoch, a.TxnStartOffset
					sp.ActiveProducers = append(sp.ActiveProducers, ap)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return Result{Resp: resp}, nil
}
