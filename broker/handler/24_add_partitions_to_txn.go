package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/txn"
)

// AddPartitionsToTxn: v0-3
//
// Behavior:
// * A transactional producer adds the partitions it is about to produce
//   to (txn.Coordinator.AddPartitions): the transaction opens if none is,
//   and every partition's answer is the coordinator's (NOT_COORDINATOR,
//   COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS while the
//   previous transaction's markers are written, PRODUCER_FENCED,
//   INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE).
// * As in Kafka, when a partition does not exist it is
//   UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED:
//   nothing is added.
// * Without a transaction coordinator (tests) every partition is
//   TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
//
// Version notes:
// * v3: flexible
// * v4+ (KIP-890: brokers batching transactions, VerifyOnly) are not
//   served (UNSUPPORTED_VERSION): the leaders do not verify transactional
//   produces (see Produce), so no broker sends them.

func handleAddPartitionsToTxn(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	var add []txn.TopicPartition
	missing := map[txn.TopicPartition]bool{}
	for _, rt := range r.Topics {
		t, ok := env.Cache.Topic(rt.Topic)
		for _, p := range rt.Partitions {
			tp := txn.TopicPartition{Topic: rt.Topic, Partition: p}
			if _, pok := t.Partitions[p]; !ok || !pok {
				missing[tp] = true
			}
			add = append(add, tp)
		}
	}
	code := func(txn.TopicPartition) int16 { return kerr.TransactionalIDAuthorizationFailed.Code }
	switch {
	case len(missing) > 0:
		code = func(tp txn.TopicPartition) int16 {
			if missing[tp] {
				return kerr.UnknownTopicOrPartition.Code
			}
			return kerr.OperationNotAttempted.Code
		}
	case env.Txn != nil:
		c := txn.ErrorCode(env.Txn.AddPartitions(r.TransactionalID, r.ProducerID, r.ProducerEpoch, add, txn.TV0))
		code = func(txn.TopicPartition) int16 { return c }
	}
	for _, rt := range r.Topics {
		st := kmsg.NewAddPartitionsToTxnResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			sp.Partition = p
			sp.ErrorCode = code(txn.TopicPartition{Topic: rt.Topic, Partition: p})
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return Result{Resp: resp}, nil
}
