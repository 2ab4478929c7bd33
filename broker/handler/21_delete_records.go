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
// * LowWatermark answers the resulting log start offset.
// * A compact-only topic (cleanup.policy=compact) is POLICY_VIOLATION.

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
			p, code := env.localPartition(t, tok, rp.Partition, false)
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
			off, hw := rp.Offset, p.HighWatermark()
			if off == -1 {
				off = hw
			}
			switch {
			case off < 0 || off > hw:
				sp.ErrorCode = kerr.OffsetOutOfRange.Code
			case off > p.LogStartOffset():
				if err := p.Log().DeleteRecordsBefore(off); err != nil {
					env.Log.Error("delete records", "topic", t.Name, "partition", rp.Partition, "offset", off, "err", err)
					sp.ErrorCode = kerr.KafkaStorageError.Code
				}
			}
			sp.LowWatermark = p.LogStartOffset()
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return Result{Resp: resp}, nil
}
