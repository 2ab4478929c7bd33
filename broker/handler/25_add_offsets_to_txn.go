package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/txn"
)

// AddOffsetsToTxn: v0-3
//
// Behavior:
// * A transactional producer that will commit a group's offsets in its
//   transaction (TxnOffsetCommit) first adds the group's __consumer_offsets
//   partition (group.PartitionFor) to the transaction, so that the
//   coordinator writes that partition's marker too and the offsets become
//   visible with the commit. The answer is the coordinator's, as for
//   AddPartitionsToTxn (NOT_COORDINATOR, CONCURRENT_TRANSACTIONS,
//   PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE).
// * __consumer_offsets is created if it does not exist yet, as
//   FindCoordinator does; a failure is COORDINATOR_NOT_AVAILABLE.
// * Without a transaction coordinator (tests) the answer is
//   TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
// * Needs WRITE on the transactional id
//   (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and READ on the group
//   (GROUP_AUTHORIZATION_FAILED).
//
// Version notes:
// * v3: flexible

func handleAddOffsetsToTxn(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !env.allowedTxnID(req, aclWrite, r.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return Result{Resp: resp}, nil
	case !env.allowedGroup(req, aclRead, r.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return Result{Resp: resp}, nil
	}
	if env.Txn == nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return Result{Resp: resp}, nil
	}
	t, err := env.offsetsTopic(ctx)
	if err != nil {
		env.Log.Warn("create "+group.TopicName, "err", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return Result{Resp: resp}, nil
	}
	tp := txn.TopicPartition{Topic: group.TopicName, Partition: group.PartitionFor(r.Group, int32(len(t.Partitions)))}
	resp.ErrorCode = txn.ErrorCode(env.Txn.AddPartitions(r.TransactionalID, r.ProducerID, r.ProducerEpoch, []txn.TopicPartition{tp}, txn.TV0))
	return Result{Resp: resp}, nil
}
