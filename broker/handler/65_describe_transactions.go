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

func handleDescribeTransactions(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DescribeTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range r.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		if env.Txn == nil {
			st.ErrorCode = kerr.CoordinatorNotAvailable.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		d, err := env.Txn.Describe(id)
		if st.ErrorCode = txn.ErrorCode(err); err == nil {
			st.State = d.State.String()
			st.ProducerID, st.ProducerEpoch, st.TimeoutMillis, st.StartTimestamp = d.ProducerID, d.ProducerEpoch, d.TimeoutMs, d.StartMs
			byTopic := map[string]int{}
			for _, tp := range d.Partitions {
				i, ok := byTopic[tp.Topic]
				if !ok {
					i = len(st.Topics)
					byTopic[tp.Topic] = i
					t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					t.Topic = tp.Topic
					st.Topics = append(st.Topics, t)
				}
				st.Topics[i].Partitions = append(st.Topics[i].Partitions, tp.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return Result{Resp: resp}, nil
}
