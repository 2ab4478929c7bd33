package txn

import (
	"fmt"
	"time"
)

// The request-level decisions of the coordinator (Kafka's
// TransactionCoordinator): each checks a request against the metadata and
// prepares the transition to log, or answers without one. The caller
// holds the transactional id's lock (see the package doc).

// ProducerIDSource allocates a new producer id, for an epoch exhausted by
// InitProducerId or by a version 2 end of a transaction.
type ProducerIDSource func() (int64, error)

// PrepareInitProducerID decides an InitProducerId for a known
// transactional id. expectedID and expectedEpoch are the request's
// (KIP-360 recovery), NoProducerID and NoProducerEpoch when it has none.
//
// With no transaction open it bumps the epoch, or moves to a new
// producer id when the epoch is exhausted. With a transaction open it
// prepares a PrepareEpochFence: the caller aborts that transaction with
// PrepareEndTxn (FromClient false, the fence's epoch), and answers
// ErrConcurrentTransactions, so that the client retries once the abort
// has completed. A pending change or an ending transaction is
// ErrConcurrentTransactions; a request for another producer is
// ErrProducerFenced.
func (m *Metadata) PrepareInitProducerID(timeoutMs int32, expectedID int64, expectedEpoch int16, newProducerID ProducerIDSource, now time.Time) (Txn, error) {
	expected := expectedID != NoProducerID || expectedEpoch != NoProducerEpoch
	switch {
	case m.hasPending:
		return Txn{}, fmt.Errorf("%w: %s: %s is pending", ErrConcurrentTransactions, m.TransactionalID, m.pending)
	case expected && !m.mayRecover(expectedID, expectedEpoch):
		return Txn{}, fmt.Errorf("%w: %s: producer %d epoch %d is not the current %d", ErrProducerFenced, m.TransactionalID, expectedID, expectedEpoch, m.ProducerID)
	}
	switch m.State {
	case PrepareAbort, PrepareCommit:
		return Txn{}, fmt.Errorf("%w: %s: the last transaction is still ending (%s)", ErrConcurrentTransactions, m.TransactionalID, m.State)
	case Empty, CompleteAbort, CompleteCommit:
		if m.EpochExhausted() && (!expected || expectedEpoch == m.ProducerEpoch) {
			id, err := newProducerID()
			if err != nil {
				return Txn{}, fmt.Errorf("%s: allocate a producer id: %w", m.TransactionalID, err)
			}
			return m.PrepareProducerIDRotation(id, timeoutMs, now, expected)
		}
		return m.PrepareIncrementProducerEpoch(timeoutMs, expectedEpoch, now)
	case Ongoing:
		// The fenced epoch is never returned: the client retries after the
		// abort and gets one more bump.
		return m.PrepareFenceProducerEpoch()
	}
	return Txn{}, fmt.Errorf("%w: %s: InitProducerId in state %s", ErrIllegalTransition, m.TransactionalID, m.State)
}

// mayRecover reports whether a KIP-360 InitProducerId naming producer id
// and epoch may go on: the id has no epoch yet, or the request names the
// current producer id (its epoch is checked next), or the previous one at
// an exhausted epoch (a retry after a rotation whose answer was lost).
func (m *Metadata) mayRecover(id int64, epoch int16) bool {
	return m.ProducerEpoch == NoProducerEpoch || id == m.ProducerID ||
		(id == m.PrevProducerID && epochExhausted(epoch))
}

// PrepareAddPartitionsToTxn decides an AddPartitionsToTxn (or the
// partition an AddOffsetsToTxn adds): the producer must be the current
// one; partitions already in an ongoing transaction need no change
// (noChange, nothing prepared).
func (m *Metadata) PrepareAddPartitionsToTxn(producerID int64, epoch int16, add []TopicPartition, v Version, now time.Time) (tx Txn, noChange bool, err error) {
	switch {
	case producerID != m.ProducerID:
		return Txn{}, false, fmt.Errorf("%w: %s: producer id %d, the current is %d", ErrInvalidProducerIDMapping, m.TransactionalID, producerID, m.ProducerID)
	case epoch != m.ProducerEpoch:
		return Txn{}, false, fmt.Errorf("%w: %s: epoch %d, the current is %d", ErrProducerFenced, m.TransactionalID, epoch, m.ProducerEpoch)
	case m.hasPending:
		return Txn{}, false, fmt.Errorf("%w: %s: %s is pending", ErrConcurrentTransactions, m.TransactionalID, m.pending)
	case m.State == PrepareCommit || m.State == PrepareAbort:
		return Txn{}, false, fmt.Errorf("%w: %s: the last transaction is still ending (%s)", ErrConcurrentTransactions, m.TransactionalID, m.State)
	case m.State == Ongoing && m.Partitions.containsAll(setOf(add)):
		return Txn{}, true, nil
	}
	tx, err = m.PrepareAddPartitions(add, now, v)
	return tx, false, err
}

func setOf(tps []TopicPartition) PartitionSet {
	s := make(PartitionSet, len(tps))
	for _, tp := range tps {
		s[tp] = struct{}{}
	}
	return s
}

// VerifyPartitions decides an AddPartitionsToTxn with VerifyOnly (KIP-890
// part 1: a partition leader asks before it appends a transactional
// batch): the producer must be the current one and its transaction not
// ending; each partition then answers nil when it is in the transaction,
// ErrTransactionAbortable when it is not. Nothing changes. As in Kafka a
// pending transition is not checked: the log write that ends it is
// checked again when it completes.
func (m *Metadata) VerifyPartitions(producerID int64, epoch int16, tps []TopicPartition) (map[TopicPartition]error, error) {
	switch {
	case producerID != m.ProducerID:
		return nil, fmt.Errorf("%w: %s: producer id %d, the current is %d", ErrInvalidProducerIDMapping, m.TransactionalID, producerID, m.ProducerID)
	case epoch != m.ProducerEpoch:
		return nil, fmt.Errorf("%w: %s: epoch %d, the current is %d", ErrProducerFenced, m.TransactionalID, epoch, m.ProducerEpoch)
	case m.State == PrepareCommit || m.State == PrepareAbort:
		return nil, fmt.Errorf("%w: %s: the last transaction is still ending (%s)", ErrConcurrentTransactions, m.TransactionalID, m.State)
	}
	out := make(map[TopicPartition]error, len(tps))
	for _, tp := range tps {
		if _, ok := m.Partitions[tp]; !ok {
			out[tp] = fmt.Errorf("%w: %s: %s-%d", ErrTransactionAbortable, m.TransactionalID, tp.Topic, tp.Partition)
			continue
		}
		out[tp] = nil
	}
	return out, nil
}
