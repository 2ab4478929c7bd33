package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/txn"
)

// AddPartitionsToTxn: v0-5
//
// Behavior:
// * A transactional producer adds the partitions it is about to produce
//   to (txn.Coordinator.AddPartitions): the transaction opens if none is,
//   and every partition's answer is the coordinator's (NOT_COORDINATOR,
//   COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS while the
//   previous transaction's markers are written, PRODUCER_FENCED,
//   INVALID_PRODUCER_ID_MAPPING for an unknown transactional id or
//   another producer, INVALID_TXN_STATE).
// * As in Kafka, when a partition does not exist it is
//   UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED:
//   nothing is added.
// * v4+ is the brokers' batched form (KIP-890): each of Transactions is
//   served on its own. VerifyOnly (a partition leader verifying a
//   transactional produce, txn.Coordinator.VerifyPartitions) changes
//   nothing: a partition in the ongoing transaction answers 0, one not
//   in it TRANSACTION_ABORTABLE, and the transaction's producer checks
//   answer for all its partitions. Without VerifyOnly the partitions are
//   added (a leader adding them for a transaction version 2 produce).
// * Without a transaction coordinator (tests) every partition is
//   TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
// * A client (v0-3) needs WRITE on the transactional id and on each
//   topic (addPartitionsDenied); a broker (v4+) CLUSTER_ACTION on the
//   cluster (top-level CLUSTER_AUTHORIZATION_FAILED), as in Kafka.
//
// Version notes:
// * v3: flexible
// * v4: batched transactions and VerifyOnly, sent by brokers only;
//   v5: TRANSACTION_ABORTABLE, and a non-verifying add is a transaction
//   version 2 one (Kafka's transactionVersionForAddPartitionsToTxn)

func handleAddPartitionsToTxn(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if r.Version < 4 {
		topics := make([]kmsg.AddPartitionsToTxnRequestTransactionTopic, 0, len(r.Topics))
		for _, rt := range r.Topics {
			topics = append(topics, kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: rt.Topic, Partitions: rt.Partitions})
		}
		code := env.addPartitionsDenied(req, r.TransactionalID, topics)
		if code == nil {
			code = env.addPartitionsToTxn(r.TransactionalID, r.ProducerID, r.ProducerEpoch, topics, false, txn.TV0)
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
	if !env.allowedCluster(req, aclClusterAction) { // brokers only
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return Result{Resp: resp}, nil
	}
	v := txn.TV0
	if r.Version >= 5 {
		v = txn.TV2
	}
	for _, rtx := range r.Transactions {
		code := env.addPartitionsToTxn(rtx.TransactionalID, rtx.ProducerID, rtx.ProducerEpoch, rtx.Topics, rtx.VerifyOnly, v)
		stx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		stx.TransactionalID = rtx.TransactionalID
		for _, rt := range rtx.Topics {
			st := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				sp.Partition = p
				sp.ErrorCode = code(txn.TopicPartition{Topic: rt.Topic, Partition: p})
				st.Partitions = append(st.Partitions, sp)
			}
			stx.Topics = append(stx.Topics, st)
		}
		resp.Transactions = append(resp.Transactions, stx)
	}
	return Result{Resp: resp}, nil
}

// addPartitionsDenied answers a client's AddPartitionsToTxn its
// principal may not send, as Kafka: without WRITE on the transactional
// id every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED; without
// WRITE on a topic (internal ones are not checked) its partitions are
// TOPIC_AUTHORIZATION_FAILED, unknown ones UNKNOWN_TOPIC_OR_PARTITION and
// the others OPERATION_NOT_ATTEMPTED. Nil when it may.
func (e *Env) addPartitionsDenied(req *Request, id string, topics []kmsg.AddPartitionsToTxnRequestTransactionTopic) func(txn.TopicPartition) int16 {
	if e.Authorizer == nil {
		return nil
	}
	if !e.allowedTxnID(req, aclWrite, id) {
		return func(txn.TopicPartition) int16 { return kerr.TransactionalIDAuthorizationFailed.Code }
	}
	var denied map[string]bool
	for _, rt := range topics {
		if !isInternalTopic(rt.Topic) && !e.allowedTopic(req, aclWrite, rt.Topic) {
			if denied == nil {
				denied = map[string]bool{}
			}
			denied[rt.Topic] = true
		}
	}
	if denied == nil {
		return nil
	}
	return func(tp txn.TopicPartition) int16 {
		switch {
		case denied[tp.Topic]:
			return kerr.TopicAuthorizationFailed.Code
		case !e.partitionExists(tp.Topic, tp.Partition):
			return kerr.UnknownTopicOrPartition.Code
		}
		return kerr.OperationNotAttempted.Code
	}
}

// addPartitionsToTxn serves one transaction's partitions: added (v is
// the client's transaction version), or only verified, and returns each
// partition's code.
func (e *Env) addPartitionsToTxn(id string, pid int64, epoch int16, topics []kmsg.AddPartitionsToTxnRequestTransactionTopic, verifyOnly bool, v txn.Version) func(txn.TopicPartition) int16 {
	var tps []txn.TopicPartition
	missing := map[txn.TopicPartition]bool{}
	for _, rt := range topics {
		t, ok := e.Cache.Topic(rt.Topic)
		for _, p := range rt.Partitions {
			tp := txn.TopicPartition{Topic: rt.Topic, Partition: p}
			if _, pok := t.Partitions[p]; !ok || !pok {
				missing[tp] = true
			}
			tps = append(tps, tp)
		}
	}
	switch {
	case len(missing) > 0:
		return func(tp txn.TopicPartition) int16 {
			if missing[tp] {
				return kerr.UnknownTopicOrPartition.Code
			}
			return kerr.OperationNotAttempted.Code
		}
	case e.Txn == nil:
		return func(txn.TopicPartition) int16 { return kerr.TransactionalIDAuthorizationFailed.Code }
	case verifyOnly:
		per, err := e.Txn.VerifyPartitions(id, pid, epoch, tps)
		codes := verifyCodes(tps, per, err)
		return func(tp txn.TopicPartition) int16 { return codes[tp] }
	}
	c := txn.ErrorCode(e.Txn.AddPartitions(id, pid, epoch, tps, v))
	return func(txn.TopicPartition) int16 { return c }
}
