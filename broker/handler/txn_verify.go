package handler

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/txn"
)

// txnOp is what a partition leader asks the transaction coordinator
// before it writes a transactional batch, and how the answer reaches an
// older client (Kafka's TransactionSupportedOperation).
type txnOp int8

const (
	// opDefaultError: produce before v11, TxnOffsetCommit before v4;
	// the partition is verified, TRANSACTION_ABORTABLE is answered as
	// INVALID_TXN_STATE.
	opDefaultError txnOp = iota
	// opGenericError: produce v11, TxnOffsetCommit v4; the client knows
	// TRANSACTION_ABORTABLE.
	opGenericError
	// opAddPartition: produce v12+, TxnOffsetCommit v5+ (transaction
	// version 2, KIP-890 part 2): the leader adds the partition to the
	// transaction instead of the client.
	opAddPartition
)

// produceTxnOp is Kafka's produceRequestVersionToTransactionSupportedOperation.
func produceTxnOp(version int16) txnOp {
	switch {
	case version >= 12:
		return opAddPartition
	case version >= 11:
		return opGenericError
	}
	return opDefaultError
}

// txnVerifyTimeout bounds a leader's call to the transaction coordinator,
// as request.timeout.ms bounds Kafka's AddPartitionsToTxnManager.
const txnVerifyTimeout = 30 * time.Second

// coordinateTxn asks the coordinator of transactional id about the
// partitions a transactional write of producer pid at epoch goes to:
// verifies they are in its transaction, or with opAddPartition adds them.
// It answers the partitions that failed with their codes as Kafka's
// AddPartitionsToTxnManager passes them on: PRODUCER_FENCED becomes
// INVALID_PRODUCER_EPOCH, and TRANSACTION_ABORTABLE INVALID_TXN_STATE
// unless op is opGenericError. The coordinator is called in-process when
// this broker is it, else over AddPartitionsToTxn v5, one transaction of
// the batched form.
//
// Adding (opAddPartition) is retried while the coordinator answers
// CONCURRENT_TRANSACTIONS, every add.partitions.to.txn.retry.backoff.ms
// for up to add.partitions.to.txn.retry.backoff.max.ms, as Kafka does: a
// version 2 client's first batch of its next transaction usually arrives
// while the coordinator still completes the previous one, whose markers
// may meanwhile drop the guards the caller started: restart, when not
// nil, runs before each retry to start them again (as each of Kafka's
// retries re-enters the verification).
func (e *Env) coordinateTxn(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition, op txnOp, restart func()) map[txn.TopicPartition]int16 {
	add := op == opAddPartition
	codes := e.askTxnCoordinator(ctx, id, pid, epoch, tps, add)
	if add {
		cfg := e.cfg()
		backoff := time.Duration(cfg.AddPartitionsToTxnRetryBackoffMs) * time.Millisecond
		deadline := time.Now().Add(time.Duration(cfg.AddPartitionsToTxnRetryBackoffMaxMs) * time.Millisecond)
		for concurrent(codes) && time.Now().Add(backoff).Before(deadline) {
			// A coordinator here wakes the retry as the transaction ends.
			if e.Txn == nil || !e.Txn.AwaitEnded(ctx, id, time.Until(deadline)) {
				t := time.NewTimer(backoff)
				select {
				case <-ctx.Done():
					t.Stop()
					return codes
				case <-t.C:
				}
			}
			if ctx.Err() != nil {
				return codes
			}
			if restart != nil {
				restart()
			}
			codes = e.askTxnCoordinator(ctx, id, pid, epoch, tps, add)
		}
	}
	for tp, c := range codes {
		switch {
		case c == 0:
			delete(codes, tp)
		case c == kerr.ProducerFenced.Code:
			codes[tp] = kerr.InvalidProducerEpoch.Code
		case c == kerr.TransactionAbortable.Code && op != opGenericError:
			codes[tp] = kerr.InvalidTxnState.Code
		}
	}
	return codes
}

// concurrent reports whether the coordinator answered
// CONCURRENT_TRANSACTIONS for any partition.
func concurrent(codes map[txn.TopicPartition]int16) bool {
	for _, c := range codes {
		if c == kerr.ConcurrentTransactions.Code {
			return true
		}
	}
	return false
}

// askTxnCoordinator returns every partition's code from the coordinator.
func (e *Env) askTxnCoordinator(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition, add bool) map[txn.TopicPartition]int16 {
	all := func(code int16) map[txn.TopicPartition]int16 {
		out := make(map[txn.TopicPartition]int16, len(tps))
		for _, tp := range tps {
			out[tp] = code
		}
		return out
	}
	t, ok := e.Cache.Topic(txn.TopicName)
	if !ok || len(t.Partitions) == 0 {
		return all(kerr.CoordinatorNotAvailable.Code)
	}
	st, ok := t.Partitions[txn.PartitionFor(id, int32(len(t.Partitions)))]
	if !ok || st.Leader < 0 {
		return all(kerr.CoordinatorNotAvailable.Code)
	}
	if st.Leader == e.cfg().NodeID {
		if e.Txn == nil {
			return all(kerr.CoordinatorNotAvailable.Code)
		}
		if add {
			return all(txn.ErrorCode(e.Txn.AddPartitions(id, pid, epoch, tps, txn.TV2)))
		}
		per, err := e.Txn.VerifyPartitions(id, pid, epoch, tps)
		return verifyCodes(tps, per, err)
	}
	if e.Peers == nil {
		return all(kerr.CoordinatorNotAvailable.Code)
	}
	ctx, cancel := context.WithTimeout(ctx, txnVerifyTimeout)
	defer cancel()
	resp, err := e.Peers.Request(ctx, st.Leader, addPartitionsRequest(id, pid, epoch, tps, !add))
	if err != nil {
		e.Log.Debug("transaction coordinator unreachable", "transactional_id", id, "coordinator", st.Leader, "err", err)
		return all(kerr.NetworkException.Code)
	}
	r, ok := resp.(*kmsg.AddPartitionsToTxnResponse)
	if !ok {
		return all(kerr.UnknownServerError.Code)
	}
	if r.ErrorCode != 0 {
		// The client must not see the broker's authorization: Kafka
		// answers that the verification did not complete.
		if r.ErrorCode == kerr.ClusterAuthorizationFailed.Code {
			return all(kerr.InvalidTxnState.Code)
		}
		return all(r.ErrorCode)
	}
	out := all(kerr.UnknownServerError.Code) // a partition the answer leaves out
	for _, rt := range r.Transactions {
		if rt.TransactionalID != id {
			continue
		}
		for _, top := range rt.Topics {
			for _, p := range top.Partitions {
				tp := txn.TopicPartition{Topic: top.Topic, Partition: p.Partition}
				if _, asked := out[tp]; asked {
					out[tp] = p.ErrorCode
				}
			}
		}
	}
	return out
}

// verifyCodes turns Coordinator.VerifyPartitions' answer for tps into
// codes: the transaction's error for all, or each partition's.
func verifyCodes(tps []txn.TopicPartition, per map[txn.TopicPartition]error, err error) map[txn.TopicPartition]int16 {
	out := make(map[txn.TopicPartition]int16, len(tps))
	for _, tp := range tps {
		if err != nil {
			out[tp] = txn.ErrorCode(err)
		} else {
			out[tp] = txn.ErrorCode(per[tp])
		}
	}
	return out
}

// addPartitionsRequest is the broker-to-broker AddPartitionsToTxn v5 of
// one transaction.
func addPartitionsRequest(id string, pid int64, epoch int16, tps []txn.TopicPartition, verifyOnly bool) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(5)
	rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = id, pid, epoch, verifyOnly
	topics, parts := txn.ByTopic(tps)
	for i, t := range topics {
		top := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		top.Topic, top.Partitions = t, parts[i]
		rt.Topics = append(rt.Topics, top)
	}
	req.Transactions = append(req.Transactions, rt)
	return req
}

// produceVerifyError is the code and message a produce answers for a
// partition whose verification failed, as Kafka's ReplicaManager
// translates them: the coordinator's retriable errors become
// NOT_ENOUGH_REPLICAS, which older clients retry without a metadata
// refresh.
func produceVerifyError(code int16) (int16, *string) {
	switch code {
	case kerr.InvalidTxnState.Code:
		return code, kmsg.StringPtr("Partition was not added to the transaction")
	case kerr.ConcurrentTransactions.Code, kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		return kerr.NotEnoughReplicas.Code, kmsg.StringPtr(fmt.Sprintf("Unable to verify the partition has been added to the transaction. Underlying error: %s", kerr.ErrorForCode(code)))
	}
	return code, nil
}
