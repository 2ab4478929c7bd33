package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteRecords: v0-2
//
// Behavior:
// * Moves the log start offset to the given offset (-1: the high
//   watermark); whole segments below it are deleted, and the new start
//   survives restarts.
// * An offset above the high watermark is OFFSET_OUT_OF_RANGE; one below
//   the current start leaves it unchanged.
// * LowWatermark answers the resulting log start offset; -1 with any error,
//   as Kafka.
// * Kafka's internal topics (__consumer_offsets, …) are
//   INVALID_TOPIC_EXCEPTION.
// * A compact-only topic (cleanup.policy=compact) is POLICY_VIOLATION.
// * The log start moves only if this broker still leads the partition at
//   the leader epoch it was checked at (Kafka's deleteRecordsOnLeader,
//   under the partition's leaderIsrUpdateLock); else
//   NOT_LEADER_OR_FOLLOWER.

func handleDeleteRecords(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DeleteRecordsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		t, tok := env.Cache.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			p, epoch, code := env.leaderPartition(t, tok, rp.Partition, false)
			if code != kerr.UnknownTopicOrPartition.Code && isInternalTopic(rt.Topic) {
				code = kerr.InvalidTopicException.Code
			}
			if code != 0 {
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if cfg := p.Config(); cfg.Compact && !cfg.Delete {
				// As Kafka: records of a compact-only topic go by key, not by offset.
				sp.ErrorCode = kerr.PolicyViolation.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			low, err := p.DeleteRecords(epoch, rp.Offset)
			sp.LowWatermark = low
			if err != nil {
				sp.ErrorCode, sp.LowWatermark = storageErrorCode(err), -1
				if sp.ErrorCode == kerr.KafkaStorageError.Code {
					env.Log.Error("delete records", "topic", t.Name, "partition", rp.Partition, "offset", rp.Offset, "err", err)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return Result{Resp: resp}, nil
}
