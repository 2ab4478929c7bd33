package handler

import (
	"context"
	"fmt"
	"time"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/broker/txn"
	"github.com/strata-broker/strata/tier/local"
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
// * A compressed batch is decompressed as a stream to check its records as
//   Kafka's LogValidator does: undecodable data or bad record framing is
//   CORRUPT_MESSAGE; more or fewer records than the header says, or offset
//   deltas other than 0..n-1, INVALID_RECORD (Kafka rewrites such a batch;
//   it is stored as sent here). Decompressing past record.InflateFactor
//   times max.message.bytes is MESSAGE_TOO_LARGE, which Kafka does not
//   check: every consumer of such a batch would have to inflate it (the
//   factor leaves room for the batches Java producers fill by estimated
//   compressed size). A rejected batch appends nothing.
// * Offsets are assigned without re-encoding the records; with
//   message.timestamp.type=LogAppendTime the batch timestamps and CRC are
//   rewritten.
// * Idempotent producers: a retried batch gets its original offsets back,
//   a sequence gap OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch
//   INVALID_PRODUCER_EPOCH.
// * A control batch (a transaction marker) from a client is
//   INVALID_RECORD: only the broker writes them. A transactional batch in
//   a request without a transactional id, or whose principal may not
//   WRITE it, is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka answers. Otherwise,
//   as Kafka 4.x's ReplicaManager (KIP-890), the leader asks the
//   producer's transaction coordinator first (appendTxn, coordinateTxn),
//   unless a batch of the producer's epoch was already appended under
//   its VerificationGuard: from v12 (transaction version 2) it adds the
//   partition to the transaction; before, with
//   transaction.partition.verification.enable (default true), it verifies
//   the partition is in it. A partition not in it is INVALID_TXN_STATE
//   ("Partition was not added to the transaction"; TRANSACTION_ABORTABLE
//   for v11), an unknown transactional id or producer
//   INVALID_PRODUCER_ID_MAPPING, a fenced producer INVALID_PRODUCER_EPOCH,
//   and the coordinator's retriable errors (CONCURRENT_TRANSACTIONS,
//   NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
//   COORDINATOR_NOT_AVAILABLE, unreachable) NOT_ENOUGH_REPLICAS: nothing
//   is appended, so no hanging transaction forms. A marker written while
//   the coordinator was asked voids the guard: INVALID_TXN_STATE.
//   Without verification (v<12) the batch is appended as Kafka 3.x did.
// * Each topic needs WRITE (TOPIC_AUTHORIZATION_FAILED for all its
//   partitions, before any other check but an unknown topic id).
// * acks=0 sends no response, but when a partition failed the connection
//   is closed instead, as Kafka does, so the producer notices and
//   refreshes its metadata; acks other than -1, 0, 1 is
//   INVALID_REQUIRED_ACKS.
// * Kafka's internal topics (__consumer_offsets, …) are
//   INVALID_TOPIC_EXCEPTION ("Cannot append to internal topic …", Kafka's
//   exception text, sent as the v8+ error message), unless the client id
//   is Kafka's admin tools' (__admin_client).
// * acks=all needs min.insync.replicas in the ISR (NOT_ENOUGH_REPLICAS,
//   nothing appended) and completes once the high watermark passes the
//   batch, i.e. every ISR member has it; past the timeout it is
//   REQUEST_TIMED_OUT, and NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR
//   shrank below the minimum meanwhile. Waiting happens off the
//   connection's reading goroutine, so pipelined produces keep flowing.
// * A log that cannot be written is KAFKA_STORAGE_ERROR (retriable), as
//   in Kafka; a full disk leaves the log readable and unchanged, and
//   appends succeed again once space is freed, without a restart.
// * The append carries the leader epoch the leadership check saw; when the
//   partition changed leader or epoch in between, it is
//   NOT_LEADER_OR_FOLLOWER and nothing is appended (Kafka checks and
//   appends under the partition's leaderIsrUpdateLock).
//
// Version notes:
// * v3: transactional id
// * v5: LogStartOffset; v8: per-record errors and error message
// * v9+: flexible; v11: TRANSACTION_ABORTABLE; v12: transaction version
//   2, the partition is added implicitly; v13: topics by id (KIP-516)

func handleProduce(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	byID := r.Version >= 13
	badAcks := r.Acks != 0 && r.Acks != 1 && r.Acks != -1
	now := time.Now().UnixMilli()
	op, verify := produceTxnOp(r.Version), env.cfg().TransactionPartitionVerificationEnable
	txnDenied := r.TransactionID != nil && !env.allowedTxnID(req, aclWrite, *r.TransactionID)
	var waits []ackWait
	var txns []txnAppend
	for _, rt := range r.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t, tok := env.topicByNameOrID(rt.Topic, rt.TopicID, byID)
		internal := tok && isInternalTopic(t.Name) && req.Header.ClientID != adminClientID
		// A topic id no topic has is UNKNOWN_TOPIC_ID before any check.
		denied := (tok || !byID) && !env.allowedTopic(req, aclWrite, topicName(rt.Topic, t, tok))
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			if denied || badAcks {
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
				if denied {
					sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				}
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			p, epoch, code := env.leaderPartition(t, tok, rp.Partition, byID)
			if internal && code != kerr.UnknownTopicOrPartition.Code {
				code = kerr.InvalidTopicException.Code
				sp.ErrorMessage = kmsg.StringPtr("Cannot append to internal topic " + t.Name)
			}
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
			if err == nil && batches[0].IsTransactional() && (r.TransactionID == nil || txnDenied) {
				sp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if err == nil && r.Acks == -1 && int32(len(p.ISR())) < cfg.MinInsyncReplicas {
				sp.ErrorCode = kerr.NotEnoughReplicas.Code
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			if err == nil && batches[0].IsTransactional() && (op == opAddPartition || verify) {
				// Appended once the coordinator has answered, below.
				txns = append(txns, txnAppend{p: p, leaderEpoch: epoch, batch: batches[0], topic: t.Name, bytes: len(rp.Records),
					tp: txn.TopicPartition{Topic: t.Name, Partition: rp.Partition}, ti: len(resp.Topics), pi: len(st.Partitions)})
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			var res local.AppendResult
			if err == nil {
				// Appended only if this broker still leads at the epoch
				// checked above (NOT_LEADER_OR_FOLLOWER otherwise).
				res, err = p.AppendAsLeader(epoch, batches, now)
			}
			if env.produced(&sp, p, t.Name, len(rp.Records), res, err, r.Acks) {
				waits = append(waits, ackWait{p: p, until: res.LastOffset + 1, topic: len(resp.Topics), part: len(st.Partitions)})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(txns) > 0 {
		waits = append(waits, env.appendTxn(ctx, resp, *r.TransactionID, txns, op, r.Acks, now)...)
	}
	if r.Acks == 0 {
		if code := firstProduceError(resp); code != 0 {
			return Result{}, fmt.Errorf("produce with acks=0 failed: %s", kerr.ErrorForCode(code))
		}
		return Result{}, nil
	}
	if len(waits) > 0 {
		timeout := time.Duration(r.TimeoutMillis) * time.Millisecond
		return Result{Later: func(ctx context.Context) Result {
			awaitAcks(ctx, resp, waits, timeout, env.Draining)
			return Result{Resp: resp}
		}}, nil
	}
	return Result{Resp: resp}, nil
}

// produced fills sp with the outcome of an append to p of a partition's
// records (n bytes of topic), and reports whether an acks=all produce
// must wait for it to replicate.
func (env *Env) produced(sp *kmsg.ProduceResponseTopicPartition, p *partition.Partition, topic string, n int, res local.AppendResult, err error, acks int16) (wait bool) {
	if err != nil {
		sp.ErrorCode = errorCode(err)
		if sp.ErrorCode != kerr.OutOfOrderSequenceNumber.Code && sp.ErrorCode != kerr.InvalidProducerEpoch.Code {
			env.Log.Debug("produce rejected", "topic", topic, "partition", p.Index, "err", err)
		}
		sp.ErrorMessage = errorMessage(err)
		sp.LogStartOffset = p.LogStartOffset()
		return false
	}
	sp.BaseOffset, sp.LogStartOffset = res.FirstOffset, res.LogStartOffset
	if p.Config().LogAppendTime {
		sp.LogAppendTime = res.LogAppendTime
	}
	env.Metrics.bytesIn(topic, n)
	return acks == -1 && p.HighWatermark() <= res.LastOffset
}

// adminClientID is the client id of Kafka's admin tools, which may write
// to internal topics (Kafka's AdminUtils.ADMIN_CLIENT_ID).
const adminClientID = "__admin_client"

// firstProduceError is the first partition error of a produce answer.
func firstProduceError(resp *kmsg.ProduceResponse) int16 {
	for _, st := range resp.Topics {
		for _, sp := range st.Partitions {
			if sp.ErrorCode != 0 {
				return sp.ErrorCode
			}
		}
	}
	return 0
}

// ackWait is a partition of an acks=all produce that waits for its high
// watermark to pass the appended batch; topic and part index the response.
type ackWait struct {
	p           *partition.Partition
	until       int64
	topic, part int
}

// awaitAcks waits until every partition's high watermark reached its
// batch (the whole ISR has it) or the timeout passes (or the broker
// drains), as Kafka's delayed produce does, and fills in the errors of
// those that did not make it.
func awaitAcks(ctx context.Context, resp *kmsg.ProduceResponse, waits []ackWait, timeout time.Duration, draining <-chan struct{}) {
	ps := make([]*partition.Partition, len(waits))
	until := make([]int64, len(waits))
	for i, w := range waits {
		ps[i], until[i] = w.p, w.until
	}
	awaitHighWatermarks(ctx, ps, until, timeout, draining)
	for _, w := range waits {
		sp := &resp.Topics[w.topic].Partitions[w.part]
		if sp.ErrorCode = ackError(w.p, w.until); sp.ErrorCode != 0 {
			sp.BaseOffset = -1
		}
	}
}

// ackError is the code of an acks=all write to p that waited for its high
// watermark to reach until: NOT_LEADER_OR_FOLLOWER when p lost its
// leadership, REQUEST_TIMED_OUT when the high watermark fell short,
// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below the minimum.
func ackError(p *partition.Partition, until int64) int16 {
	switch {
	case !p.IsLeader():
		return kerr.NotLeaderForPartition.Code
	case p.HighWatermark() < until:
		return kerr.RequestTimedOut.Code
	case int32(len(p.ISR())) < p.Config().MinInsyncReplicas:
		return kerr.NotEnoughReplicasAfterAppend.Code
	}
	return 0
}

// awaitHighWatermarks waits until every ps[i]'s high watermark reached
// until[i] or it is no longer the leader, or the timeout passes (or the
// broker drains).
func awaitHighWatermarks(ctx context.Context, ps []*partition.Partition, until []int64, timeout time.Duration, draining <-chan struct{}) {
	awaitPartitions(ctx, ps, func(i int) bool {
		return ps[i].HighWatermark() < until[i] && ps[i].IsLeader()
	}, time.Now().Add(timeout), draining)
}
