package handler

import (
	"context"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListOffsets special timestamps (KIP-79, KIP-734, KIP-405, KIP-1005).
const (
	latestTimestamp        = -1
	earliestTimestamp      = -2
	maxTimestamp           = -3
	earliestLocalTimestamp = -4
	latestTieredTimestamp  = -5
)

// ListOffsets: v0-9
//
// Behavior:
// * -2 earliest (log start offset, in the tier when tiered), -1 latest
//   (the last fetchable offset: the high watermark, or for read_committed,
//   isolation level 1 from v2, the last stable offset, which is the same
//   without transactions), -3 the record with the largest timestamp if it
//   is below the last fetchable offset (v7+), -4 the earliest
//   offset on local disk (v8+), -5 the latest tiered offset (v9+; -1 while
//   nothing is tiered).
// * Any other timestamp finds the first record whose timestamp is at least
//   it, through the time index (the tier's first, then the local one);
//   none gives offset and timestamp -1. A failed read of the tier is
//   KAFKA_STORAGE_ERROR, not an answer from the local log alone. Only
//   records below the last fetchable offset are found (Kafka's
//   fetchOffsetForTimestamp).
// * A consumer's request (replica id -1, v1+) to a new leader whose high
//   watermark is still below the start of its leader epoch is
//   OFFSET_NOT_AVAILABLE for -1, and for a lookup that finds nothing below
//   the high watermark (KIP-207): the end of the log is not known yet.
// * v0 answers in OldStyleOffsets.
// * LeaderEpoch (v4+) is, for -1, the current leader epoch; for any other
//   answer the epoch whose leader wrote the offset (Kafka's
//   fetchOffsetByTimestamp): from the leader-epoch history, or from the
//   remote copy's epochs for an offset only the tier holds (-2 on a tiered
//   partition, -5); -1 when neither knows it.
// * CurrentLeaderEpoch (v4+) is checked as Fetch checks it.
// * Each topic needs DESCRIBE (TOPIC_AUTHORIZATION_FAILED).

// epochStart is where the partition's current leader epoch starts in its
// log, or -1 when the log has no entry for it yet.
func epochStart(p *partition.Partition) int64 {
	es := p.Log().Epochs()
	if n := len(es); n > 0 && es[n-1].Epoch == p.LeaderEpoch() {
		return es[n-1].StartOffset
	}
	return -1
}

func handleListOffsets(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range r.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		t, tok := env.Cache.Topic(rt.Topic)
		denied := !env.allowedTopic(req, aclDescribe, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, code := env.localPartition(t, tok, rp.Partition, false)
			if code == 0 {
				code = checkLeaderEpoch(rp.CurrentLeaderEpoch, p.LeaderEpoch())
			}
			if code == 0 && rp.Timestamp < latestTieredTimestamp {
				code = kerr.InvalidRequest.Code
			}
			if code != 0 {
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			l := p.Log()
			hw := p.HighWatermark()
			// The last offset a consumer at this isolation level reads.
			fetchable := hw
			if r.Version >= 2 && r.IsolationLevel == readCommittedLevel {
				fetchable = lastStableOffset(p, hw)
			}
			lagging := r.Version >= 1 && r.ReplicaID == -1 && epochStart(p) > hw
			switch rp.Timestamp {
			case earliestTimestamp:
				sp.Offset = p.LogStartOffset() // in the tier when tiered
			case earliestLocalTimestamp:
				sp.Offset = p.LocalLogStartOffset()
			case latestTimestamp:
				sp.Offset = fetchable
				if lagging {
					sp.ErrorCode, sp.Offset = kerr.OffsetNotAvailable.Code, -1
				}
			case maxTimestamp:
				if ts, off := l.MaxTimestamp(); off >= 0 && off < fetchable {
					sp.Timestamp, sp.Offset = ts, off
				} else if lagging {
					sp.ErrorCode = kerr.OffsetNotAvailable.Code
				}
			case latestTieredTimestamp:
				if off, ok := p.TieredEndOffset(); ok {
					sp.Offset = off
				}
			default:
				off, ts, ok, err := p.OffsetForTimestamp(ctx, rp.Timestamp)
				switch {
				case err != nil:
					env.Log.Warn("list offsets by timestamp", "topic", t.Name, "partition", rp.Partition, "err", err)
					sp.ErrorCode = storageErrorCode(err)
				case ok && off < fetchable:
					sp.Timestamp, sp.Offset = ts, off
				case lagging:
					sp.ErrorCode = kerr.OffsetNotAvailable.Code
				}
			}
			switch {
			case sp.Offset < 0:
			case rp.Timestamp == latestTimestamp:
				sp.LeaderEpoch = p.LeaderEpoch()
			default:
				// The epoch that wrote the offset, as Kafka's
				// fetchOffsetByTimestamp answers from its epoch cache.
				sp.LeaderEpoch = p.EpochForOffset(sp.Offset)
			}
			if r.Version == 0 {
				if sp.Offset >= 0 {
					sp.OldStyleOffsets = []int64{sp.Offset}
				} else {
					sp.OldStyleOffsets = []int64{}
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return Result{Resp: resp}, nil
}
