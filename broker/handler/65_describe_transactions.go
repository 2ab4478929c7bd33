package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/txn"
)

// DescribeTransactions: v0
//
// Behavior:
// * Each transactional id is described by its coordinator
//   (txn.Coordinator.Describe): state, producer id and epoch, timeout,
//   start time (-1 with no transaction open) and partitions;
//   TRANSACTIONAL_ID_NOT_FOUND for an id it does not know, NOT_COORDINATOR
//   and COORDINATOR_LOAD_IN_PROGRESS as for the other transaction APIs.
// * Without a transaction coordinator (tests) every id is
//   COORDINATOR_NOT_AVAILABLE.
// * Each id needs DESCRIBE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); only
//   the partitions of topics the principal may DESCRIBE are listed, as
//   in Kafka.

func handleDescribeTransactions(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DescribeTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range r.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		if !env.allowedTxnID(req, aclDescribe, id) {
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		if env.Txn == nil {
			st.ErrorCode = kerr.CoordinatorNotAvailable.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		d, err := env.Txn.Describe(id)
		if st.ErrorCode = txn.ErrorCode(err); err == nil {
			st.State = d.State.String()
			st.ProducerID, st.ProducerEpoch, st.TimeoutMillis, st.StartTimestamp = d.ProducerID, d.ProducerEpoch, d.TimeoutMs, d.StartMs
			topics, parts := txn.ByTopic(d.Partitions)
			for i, name := range topics {
				if !env.allowedTopic(req, aclDescribe, name) {
					continue // as Kafka: only the topics the principal may describe
				}
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic, t.Partitions = name, parts[i]
				st.Topics = append(st.Topics, t)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return Result{Resp: resp}, nil
}
