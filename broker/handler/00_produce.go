package handler

import (
	"context"
	"fmt"
	"time"

	"github.com/strata-broker/strata/tier/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Produce: v3-13
//
// Behavior:
// * Each partition carries exactly one v2 batch (as Kafka requires from
//   v3), validated (magic, lengths, CRC-32C, record count, max.message.bytes,
//   keys on compacted topics) before it is appended; zstd before v7 is
//   UNSUPPORTED_COMPRESSION_TYPE.
// * Offsets are assigned without re-encoding the records; with
//   message.timestamp.type=LogAppendTime the batch timestamps and CRC are
//   rewritten.
// * Idempotent producers: a retried batch gets its original offsets back,
//   a sequence gap OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch
//   INVALID_PRODUCER_EPOCH.
// * acks=0 sends no response; acks other than -1, 0, 1 is INVALID_REQUIRED_ACKS.
// * A single broker commits on append, so acks=all completes at once.
//
// Version notes:
// * v3: transactional id (transactions are not served yet)
// * v5: LogStartOffset; v8: per-record errors and error message
// * v9+: flexible; v13: topics by id (KIP-516)

func handleProduce(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	byID := r.Version >= 13
	badAcks := r.Acks != 0 && r.Acks != 1 && r.Acks != -1
	now := time.Now().UnixMilli()
	for _, rt := range r.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t, tok := env.topicByNameOrID(rt.Topic, rt.TopicID, byID)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			if badAcks {
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, code := env.localPartition(t, tok, rp.Partition, byID)
			if code != 0 {
				sp.ErrorCode = code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			cfg := p.Config()
			batches, err := record.Split(rp.Records)
			if err == nil && len(batches) != 1 {
				err = fmt.Errorf("%w: produce v3+ carries exactly one batch per partition, got %d", record.ErrInvalidRecord, len(batches))
			}
			if err == nil && r.Version < 7 && batches[0].Codec() == record.Zstd {
				sp.ErrorCode = kerr.UnsupportedCompressionType.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if err == nil {
				err = record.Validate(batches[0], record.ValidateOptions{MaxBatchBytes: int(cfg.MaxMessageBytes), RequireKeys: cfg.Compact})
			}
			if err == nil {
				res, aerr := p.Append(batches, now)
				err = aerr
				if aerr == nil {
					sp.BaseOffset, sp.LogStartOffset = res.FirstOffset, res.LogStartOffset
					if cfg.LogAppendTime {
						sp.LogAppendTime = res.LogAppendTime
					}
					env.Metrics.bytesIn(t.Name, len(rp.Records))
				}
			}
			if err != nil {
				sp.ErrorCode = errorCode(err)
				if sp.ErrorCode != kerr.OutOfOrderSequenceNumber.Code && sp.ErrorCode != kerr.InvalidProducerEpoch.Code {
					env.Log.Debug("produce rejected", "topic", t.Name, "partition", rp.Partition, "err", err)
				}
				sp.ErrorMessage = errorMessage(err)
				sp.LogStartOffset = p.LogStartOffset()
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if r.Acks == 0 {
		return Result{}, nil
	}
	return Result{Resp: resp}, nil
}
