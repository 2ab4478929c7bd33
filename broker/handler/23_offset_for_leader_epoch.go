package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/partition"
)

// OffsetForLeaderEpoch: v0-4
//
// Behavior:
// * Answers the end offset of the largest leader epoch not above the one
//   asked for, from the partition's leader-epoch checkpoint (Kafka's
//   LeaderEpochFileCache rules); the latest epoch ends at the log end.
//   Unknown history answers epoch -1, offset -1.
// * Followers (replica id ≥ 0, v3+) use it to find where their log
//   diverges before fetching; clients use it after a leader change
//   (KIP-320) to detect truncation.
// * Only the leader answers; CurrentLeaderEpoch (v2+) is checked as Fetch
//   checks it.
// * A follower needs CLUSTER_ACTION on the cluster
//   (CLUSTER_AUTHORIZATION_FAILED for every partition), a client DESCRIBE
//   on each topic (TOPIC_AUTHORIZATION_FAILED), as in Kafka.

func handleOffsetForLeaderEpoch(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	follower := r.Version >= 3 && r.ReplicaID >= 0
	followerDenied := follower && !env.allowedCluster(req, aclClusterAction)
	for _, rt := range r.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		t, tok := env.Cache.Topic(rt.Topic)
		var denied int16
		switch {
		case followerDenied:
			denied = kerr.ClusterAuthorizationFailed.Code
		case !follower && !env.allowedTopic(req, aclDescribe, rt.Topic):
			denied = kerr.TopicAuthorizationFailed.Code
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
			var p *partition.Partition
			code := denied
			if code == 0 {
				p, code = env.localPartition(t, tok, rp.Partition, false)
			}
			if code == 0 {
				code = checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch())
			}
			if code != 0 {
				sp.ErrorCode = code
			} else {
				sp.LeaderEpoch, sp.EndOffset = p.Log().EndOffsetForEpoch(rp.LeaderEpoch)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return Result{Resp: resp}, nil
}
