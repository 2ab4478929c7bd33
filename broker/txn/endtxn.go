package txn

import (
	"fmt"
	"math"
	"time"
)

// EndRequest is an EndTxn, or an abort the coordinator starts itself.
type EndRequest struct {
	ProducerID    int64
	ProducerEpoch int16
	Commit        bool
	// Version is the client's transaction version (2 from EndTxn v5 on).
	// The coordinator's own aborts use the finalized transaction.version.
	Version Version
	// FromClient is false for the coordinator's own aborts: of an ongoing
	// transaction fenced by InitProducerId, and of a timed-out one.
	FromClient bool
}

// EndResult is the decision on an EndRequest.
type EndResult struct {
	// Txn is the PrepareCommit or PrepareAbort to log, unless Retry.
	Txn Txn
	// Retry: the request repeats an end that has completed; answer
	// success with ProducerID and ProducerEpoch and log nothing.
	Retry         bool
	ProducerID    int64
	ProducerEpoch int16
	// Fence: Txn replaces a pending PrepareEpochFence. If its write
	// fails, call FenceFailed rather than CancelTransition.
	Fence bool
}

// PrepareEndTxn decides an EndTxn, or the coordinator's own abort, as
// Kafka 4.x does: transaction version 2 ends bump the epoch (moving to a
// producer id from newProducerID when the epoch is exhausted) and a
// retried end is recognised by the epoch it bumped; version 0-1 ends keep
// the epoch and a repeated end of the completed transaction succeeds.
// An abort that follows a pending epoch fence (PrepareInitProducerID or
// the timeout sweep) takes the fence's epoch.
func (m *Metadata) PrepareEndTxn(r EndRequest, newProducerID ProducerIDSource, now time.Time) (EndResult, error) {
	if r.Version.bumpsEpoch() {
		return m.prepareEndV2(r, newProducerID, now)
	}
	return m.prepareEndV1(r, now)
}

func (m *Metadata) prepareEndV1(r EndRequest, now time.Time) (EndResult, error) {
	fence := m.hasPending && m.pending == PrepareEpochFence
	switch {
	case r.ProducerID != m.ProducerID:
		return EndResult{}, m.endErr(ErrInvalidProducerIDMapping, r)
	case (r.FromClient && r.ProducerEpoch != m.ProducerEpoch) || r.ProducerEpoch < m.ProducerEpoch:
		return EndResult{}, m.endErr(ErrProducerFenced, r)
	case m.hasPending && !fence:
		return EndResult{}, m.endErr(ErrConcurrentTransactions, r)
	}
	switch m.State {
	case Ongoing:
		if r.Commit && fence { // the producer is being fenced: it retries, then learns so
			return EndResult{}, m.endErr(ErrConcurrentTransactions, r)
		}
		s := PrepareCommit
		if !r.Commit {
			s = PrepareAbort
		}
		if fence {
			m.takeFence(r.ProducerEpoch)
		}
		// Kafka logs version 0-1 ends as version 0.
		tx, err := m.PrepareAbortOrCommit(s, TV0, NoProducerID, now, false)
		return EndResult{Txn: tx, Fence: fence}, err
	case CompleteCommit, CompleteAbort:
		if r.Commit == (m.State == CompleteCommit) {
			return EndResult{Retry: true, ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}, nil
		}
		return EndResult{}, m.endErr(ErrInvalidTxnState, r)
	case PrepareCommit, PrepareAbort:
		if r.Commit == (m.State == PrepareCommit) {
			return EndResult{}, m.endErr(ErrConcurrentTransactions, r)
		}
		return EndResult{}, m.endErr(ErrInvalidTxnState, r)
	case Empty:
		return EndResult{}, m.endErr(ErrInvalidTxnState, r)
	}
	return EndResult{}, m.endErr(ErrIllegalTransition, r)
}

// prepareEndV2 follows Kafka's table for version 2 (PF = fenced, ITS =
// invalid state, NONE = retry answered as success, EB = end with a bump;
// a retry carries the epoch before the bump the end made):
//
//	               Abort          Commit
//	               retry current  retry current
//	Empty          PF    EB       PF    ITS
//	CompleteAbort  NONE  EB       ITS   ITS
//	CompleteCommit ITS   EB       NONE  ITS
func (m *Metadata) prepareEndV2(r EndRequest, newProducerID ProducerIDSource, now time.Time) (EndResult, error) {
	fence := m.hasPending && m.pending == PrepareEpochFence
	// A retry of an end that bumped the epoch, or that exhausted it and
	// moved to a new producer id.
	retryOnOverflow := !fence && m.PrevProducerID == r.ProducerID && r.ProducerEpoch == math.MaxInt16-1 && m.ProducerEpoch == 0
	retryOnBump := !fence && m.ProducerEpoch == r.ProducerEpoch+1
	retry := retryOnBump || retryOnOverflow
	var validEpoch bool
	switch {
	case fence:
		validEpoch = (!r.FromClient || r.ProducerEpoch == m.ProducerEpoch) && r.ProducerEpoch >= m.ProducerEpoch
	case m.State == PrepareCommit || m.State == PrepareAbort:
		validEpoch = retryOnBump
	case m.State == CompleteCommit || m.State == CompleteAbort:
		validEpoch = retry || r.ProducerEpoch == m.ProducerEpoch
	default:
		validEpoch = r.ProducerEpoch == m.ProducerEpoch
	}
	switch {
	case m.ProducerID != r.ProducerID && !retryOnOverflow:
		return EndResult{}, m.endErr(ErrInvalidProducerIDMapping, r)
	case !validEpoch:
		return EndResult{}, m.endErr(ErrProducerFenced, r)
	case m.hasPending && !fence:
		return EndResult{}, m.endErr(ErrConcurrentTransactions, r)
	}
	end := func(s State, noPartitionAdded bool) (EndResult, error) {
		next := NoProducerID
		if !fence && m.EpochExhausted() {
			id, err := newProducerID()
			if err != nil {
				return EndResult{}, fmt.Errorf("%s: allocate a producer id: %w", m.TransactionalID, err)
			}
			next = id
		}
		if fence {
			m.takeFence(r.ProducerEpoch)
		}
		tx, err := m.PrepareAbortOrCommit(s, r.Version, next, now, noPartitionAdded)
		return EndResult{Txn: tx, Fence: fence}, err
	}
	success := EndResult{Retry: true, ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch}
	switch m.State {
	case Ongoing:
		switch {
		case r.Commit && fence: // the producer is being fenced: it retries, then learns so
			return EndResult{}, m.endErr(ErrConcurrentTransactions, r)
		case r.Commit:
			return end(PrepareCommit, false)
		}
		return end(PrepareAbort, false)
	case CompleteCommit:
		switch {
		case r.Commit && retry:
			return success, nil
		case !r.Commit && !retry:
			return end(PrepareAbort, true)
		}
		return EndResult{}, m.endErr(ErrInvalidTxnState, r)
	case CompleteAbort:
		switch {
		case !r.Commit && retry:
			return success, nil
		case !r.Commit:
			return end(PrepareAbort, true)
		}
		return EndResult{}, m.endErr(ErrInvalidTxnState, r)
	case PrepareCommit, PrepareAbort:
		if r.Commit == (m.State == PrepareCommit) {
			return EndResult{}, m.endErr(ErrConcurrentTransactions, r)
		}
		return EndResult{}, m.endErr(ErrInvalidTxnState, r)
	case Empty:
		if !r.Commit {
			return end(PrepareAbort, true)
		}
		return EndResult{}, m.endErr(ErrInvalidTxnState, r)
	}
	return EndResult{}, m.endErr(ErrIllegalTransition, r)
}

// takeFence turns a pending epoch fence into the epoch the abort starts
// from, as Kafka does in memory before logging the abort: the fenced
// producer's epoch is no longer the last one.
func (m *Metadata) takeFence(epoch int16) {
	m.hasPending = false
	m.ProducerEpoch, m.LastProducerEpoch = epoch, NoProducerEpoch
}

func (m *Metadata) endErr(err error, r EndRequest) error {
	what := "abort"
	if r.Commit {
		what = "commit"
	}
	return fmt.Errorf("%w: %s: %s by producer %d epoch %d in state %s (producer %d epoch %d)",
		err, m.TransactionalID, what, r.ProducerID, r.ProducerEpoch, m.State, m.ProducerID, m.ProducerEpoch)
}
