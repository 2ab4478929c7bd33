package handler

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/txn"
)

// TxnOffsetCommit: v0-5
//
// Behavior:
// * Offsets committed inside a transaction (Kafka's
//   handleTxnCommitOffsets): they are written to __consumer_offsets as a
//   transactional batch of the request's producer id and epoch (one batch
//   per request, acknowledged once replicated, as OffsetCommit) and stay
//   pending: OffsetFetch does not show them (RequireStable answers
//   UNSTABLE_OFFSET_COMMIT) until the transaction's COMMIT marker lands
//   on the group's partition (WriteTxnMarkers); ABORT drops them. A
//   non-transactional commit of a partition written after the
//   transactional one wins over it at COMMIT, as in Kafka.
// * A missing group is created. Generation and member (v3+, KIP-447) are
//   checked when given: FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID,
//   ILLEGAL_GENERATION (for KIP-848 groups the generation is the member
//   epoch); the group's state does not matter.
// * An older producer epoch than the one the partition has seen is
//   INVALID_PRODUCER_EPOCH; partitions the metadata does not know are
//   UNKNOWN_TOPIC_OR_PARTITION; metadata longer than
//   offset.metadata.max.bytes is OFFSET_METADATA_TOO_LARGE.
// * The group's partition of __consumer_offsets must be in the
//   producer's transaction: from v5 (transaction version 2, KIP-890 part
//   2; the client sends no AddOffsetsToTxn) it is added here first, as
//   Kafka's group coordinator does; before v5, with
//   transaction.partition.verification.enable (default true), it is
//   verified (KIP-890 part 1; AddOffsetsToTxn added it). Both ask the
//   transaction coordinator (coordinateTxn). If it refuses, every
//   partition answers its code and nothing is written: INVALID_TXN_STATE
//   for a partition not added (TRANSACTION_ABORTABLE from v4),
//   INVALID_PRODUCER_ID_MAPPING for an unknown transactional id,
//   INVALID_PRODUCER_EPOCH for a fenced producer, and the coordinator's
//   retriable errors (CONCURRENT_TRANSACTIONS, NOT_COORDINATOR, …) as
//   they are. Unlike produce's, the check and the group's write are not
//   one critical section with the markers.
// * Needs WRITE on the transactional id
//   (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition), READ on
//   the group (GROUP_AUTHORIZATION_FAILED for every partition) and READ
//   on each topic (TOPIC_AUTHORIZATION_FAILED), as in Kafka.
//
// Version notes:
// * v2: leader epoch; v3: flexible, generation, member and instance id
// * v4: TRANSACTION_ABORTABLE
// * v5: the partition is added implicitly (above)

func handleTxnOffsetCommit(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.TxnOffsetCommitRequest)
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	now := time.Now().UnixMilli()
	tr := group.TxnCommitRequest{Group: r.Group, TransactionalID: r.TransactionalID, ProducerID: r.ProducerID,
		ProducerEpoch: r.ProducerEpoch, Generation: -1}
	if r.Version >= 3 {
		tr.Generation, tr.MemberID, tr.InstanceID = r.Generation, r.MemberID, r.InstanceID
	}
	var denied int16
	switch {
	case !env.allowedTxnID(req, aclWrite, r.TransactionalID):
		denied = kerr.TransactionalIDAuthorizationFailed.Code
	case !env.allowedGroup(req, aclRead, r.Group):
		denied = kerr.GroupAuthorizationFailed.Code
	}
	for _, rt := range r.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		t, known := env.Cache.Topic(rt.Topic)
		code := denied
		if code == 0 && !env.allowedTopic(req, aclRead, rt.Topic) {
			code = kerr.TopicAuthorizationFailed.Code
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			if code != 0 {
				sp.ErrorCode = code
			} else if _, ok := t.Partitions[rp.Partition]; !known || !ok {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				o := group.Offset{Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch, CommitTimestamp: now, ExpireTimestamp: -1}
				if r.Version < 2 {
					o.LeaderEpoch = -1
				}
				if rp.Metadata != nil {
					o.Metadata = *rp.Metadata
				}
				tr.Offsets = append(tr.Offsets, group.CommitOffset{TopicPartition: group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}, Offset: o})
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(tr.Offsets) == 0 {
		return Result{Resp: resp}, nil
	}
	op, check := opAddPartition, true
	switch {
	case r.Version == 4:
		op, check = opGenericError, env.cfg().TransactionPartitionVerificationEnable
	case r.Version < 4:
		op, check = opDefaultError, env.cfg().TransactionPartitionVerificationEnable
	}
	if check {
		if code := env.coordinateOffsetsPartition(ctx, r, op); code != 0 {
			for ti := range resp.Topics {
				for pi := range resp.Topics[ti].Partitions {
					if sp := &resp.Topics[ti].Partitions[pi]; sp.ErrorCode == 0 {
						sp.ErrorCode = code
					}
				}
			}
			return Result{Resp: resp}, nil
		}
	}
	// The offsets went in response order, skipping the partitions already
	// answered with an error.
	errs := env.Groups.TxnCommitOffsets(tr)
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			if sp := &resp.Topics[ti].Partitions[pi]; sp.ErrorCode == 0 {
				sp.ErrorCode = groupErrorCode(errs[0])
				errs = errs[1:]
			}
		}
	}
	return Result{Resp: resp}, nil
}

// coordinateOffsetsPartition adds the group's partition of
// __consumer_offsets to the transaction of a TxnOffsetCommit, or verifies
// it is in it (op), and returns the coordinator's code. Without the topic
// the group coordinator answers (NOT_COORDINATOR).
func (e *Env) coordinateOffsetsPartition(ctx context.Context, r *kmsg.TxnOffsetCommitRequest, op txnOp) int16 {
	t, ok := e.Cache.Topic(group.TopicName)
	if !ok || len(t.Partitions) == 0 {
		return 0
	}
	tp := txn.TopicPartition{Topic: group.TopicName, Partition: group.PartitionFor(r.Group, int32(len(t.Partitions)))}
	return e.coordinateTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, []txn.TopicPartition{tp}, op, nil)[tp]
}
