package handler

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/partition"
)

// DeleteRecords: v0-2
//
// Behavior:
// * Moves the leader's log start offset to the given offset (-1: the high
//   watermark); whole segments below it are deleted, and the new start
//   survives restarts. Followers move theirs to the leader's on their next
//   fetch and report it in the one after.
// * Answers once the low watermark, the smallest log start offset of the
//   leader and its live followers (Kafka's lowWatermarkIfLeader; a
//   follower that has not reported one since this broker became leader
//   counts as -1), reaches the offset, as Kafka's DelayedDeleteRecords:
//   LowWatermark is then the low watermark. The wait is woken by a
//   follower's fetch reporting a higher log start (or any other change to
//   the partition) and happens off the connection's reading goroutine.
//   Past the request's timeout it is REQUEST_TIMED_OUT with the low
//   watermark as it was at the deletion; NOT_LEADER_OR_FOLLOWER if the
//   partition changed leader meanwhile.
// * An offset above the high watermark is OFFSET_OUT_OF_RANGE; one below
//   the current start leaves it unchanged.
// * LowWatermark is -1 with any other error, as Kafka.
// * Each topic needs DELETE (TOPIC_AUTHORIZATION_FAILED).
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
	var waits []lowWatermarkWait
	for _, rt := range r.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		t, tok := env.Cache.Topic(rt.Topic)
		denied := !env.allowedTopic(req, aclDelete, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
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
			until, err := p.DeleteRecords(epoch, rp.Offset)
			low, leads := p.LowWatermark(env.alive)
			switch {
			case err != nil:
				sp.ErrorCode = storageErrorCode(err)
				if sp.ErrorCode == kerr.KafkaStorageError.Code {
					env.Log.Error("delete records", "topic", t.Name, "partition", rp.Partition, "offset", rp.Offset, "err", err)
				}
			case !leads:
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			case low < until:
				// Answered by awaitLowWatermarks, which clears the error
				// once the low watermark gets there.
				sp.ErrorCode, sp.LowWatermark = kerr.RequestTimedOut.Code, low
				waits = append(waits, lowWatermarkWait{p: p, until: until, topic: len(resp.Topics), part: len(st.Partitions)})
			default:
				sp.LowWatermark = low
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(waits) > 0 {
		timeout := time.Duration(r.TimeoutMillis) * time.Millisecond
		return Result{Later: func(ctx context.Context) Result {
			awaitLowWatermarks(ctx, env, resp, waits, timeout)
			return Result{Resp: resp}
		}}, nil
	}
	return Result{Resp: resp}, nil
}

// lowWatermarkWait is a partition of a DeleteRecords that waits for its
// low watermark to reach until; topic and part index the response.
type lowWatermarkWait struct {
	p           *partition.Partition
	until       int64
	topic, part int
}

// awaitLowWatermarks waits until every partition's low watermark reached
// its offset, this broker no longer leads it, or the timeout passes (or
// the broker drains), and answers those that made it with their low
// watermark; the others keep REQUEST_TIMED_OUT.
func awaitLowWatermarks(ctx context.Context, env *Env, resp *kmsg.DeleteRecordsResponse, waits []lowWatermarkWait, timeout time.Duration) {
	ps := make([]*partition.Partition, len(waits))
	for i, w := range waits {
		ps[i] = w.p
	}
	awaitPartitions(ctx, ps, func(i int) bool {
		low, leads := waits[i].p.LowWatermark(env.alive)
		return leads && low < waits[i].until
	}, time.Now().Add(timeout), env.Draining)
	for _, w := range waits {
		sp := &resp.Topics[w.topic].Partitions[w.part]
		switch low, leads := w.p.LowWatermark(env.alive); {
		case !leads:
			sp.ErrorCode, sp.LowWatermark = kerr.NotLeaderForPartition.Code, -1
		case low >= w.until:
			sp.ErrorCode, sp.LowWatermark = 0, low
		}
	}
}

// alive reports whether broker id is alive (registered), as Kafka's
// metadataCache.hasAliveBroker.
func (e *Env) alive(id int32) bool {
	_, ok := e.Cache.Broker(id)
	return ok
}
