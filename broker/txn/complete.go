package txn

import (
	"fmt"
	"maps"
)

// CompleteTransition applies t, the transition prepared last, once its
// record is replicated. It checks, as Kafka does, that t is the pending
// state and keeps the producer's identity, epoch, timeout, partitions and
// start time the way the target state requires; a mismatch is a bug
// (ErrIllegalTransition) and changes nothing.
func (m *Metadata) CompleteTransition(t Txn) error {
	if !m.hasPending {
		return fmt.Errorf("%w: %s: completing %s with no transition pending", ErrIllegalTransition, m.TransactionalID, t.State)
	}
	if t.State != m.pending {
		return m.mismatch(t, "pending "+m.pending.String())
	}
	switch t.State {
	case Empty: // InitProducerId
		if m.ProducerEpoch != t.ProducerEpoch && !m.validEpochBump(t) {
			return m.mismatch(t, "epoch is neither kept nor bumped")
		}
		if len(t.Partitions) != 0 || t.StartMs != -1 {
			return m.mismatch(t, "an empty transaction has partitions or a start time")
		}
	case Ongoing: // AddPartitionsToTxn, AddOffsetsToTxn
		if !m.validEpoch(t) || !t.Partitions.containsAll(m.Partitions) || t.TimeoutMs != m.TimeoutMs {
			return m.mismatch(t, "epoch, timeout or partitions changed")
		}
	case PrepareCommit, PrepareAbort: // EndTxn
		// A version 2 abort may start from no transaction, at a new start time.
		emptyAbort := t.State == PrepareAbort && t.ClientVersion.bumpsEpoch() &&
			(m.State == Empty || m.State == CompleteCommit || m.State == CompleteAbort)
		if !m.validEpoch(t) || !maps.Equal(t.Partitions, m.Partitions) || t.TimeoutMs != m.TimeoutMs ||
			(t.StartMs != m.StartMs && !emptyAbort) {
			return m.mismatch(t, "epoch, timeout, partitions or start time changed")
		}
	case CompleteCommit, CompleteAbort: // markers written
		if !m.validEpoch(t) || t.TimeoutMs != m.TimeoutMs || t.StartMs == -1 {
			return m.mismatch(t, "epoch or timeout changed, or no start time")
		}
	case PrepareEpochFence:
		// Only ever pending: the fence becomes PrepareAbort before it is logged.
		return m.mismatch(t, "a fence is never completed")
	case Dead:
		// An expired id is removed, not completed.
		return m.mismatch(t, "an expired id is removed, not completed")
	}
	m.Txn = t.clone()
	m.hasPending = false
	return nil
}

func (m *Metadata) mismatch(t Txn, why string) error {
	return fmt.Errorf("%w: %s: completing %s → %s: %s", ErrIllegalTransition, m.TransactionalID, m.State, t.State, why)
}

// validEpoch reports whether t keeps the producer's id and epoch, as the
// target state expects: a version 2 end bumped the epoch once
// (PrepareCommit/PrepareAbort carry the current one as the last), and its
// completion may have moved to the next producer id at epoch 0.
func (m *Metadata) validEpoch(t Txn) bool {
	v2 := t.ClientVersion.bumpsEpoch()
	switch {
	case v2 && (t.State == CompleteCommit || t.State == CompleteAbort) && t.ProducerEpoch == 0:
		return t.LastProducerEpoch == m.LastProducerEpoch && t.PrevProducerID == m.ProducerID
	case v2 && (t.State == PrepareCommit || t.State == PrepareAbort):
		return t.LastProducerEpoch == m.ProducerEpoch && t.ProducerID == m.ProducerID
	}
	return t.ProducerEpoch == m.ProducerEpoch && t.ProducerID == m.ProducerID
}

// validEpochBump reports whether t bumps the epoch by one, or starts a
// new producer id at 0.
func (m *Metadata) validEpochBump(t Txn) bool {
	return t.ProducerEpoch == m.ProducerEpoch+1 || (t.ProducerEpoch == 0 && t.ProducerID != m.ProducerID)
}
