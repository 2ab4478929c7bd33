package partition

import (
	"errors"
	"fmt"

	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
)

// ErrTxnNotVerified: a transactional batch's verification with the
// transaction coordinator no longer holds (a marker ended the producer's
// transaction on this partition meanwhile, or a newer epoch started
// verifying), or none was done; nothing was appended (Kafka answers
// INVALID_TXN_STATE).
var ErrTxnNotVerified = errors.New("partition: transaction not verified with the coordinator")

// VerificationGuard stands for one verification of a producer's
// transaction on a partition (Kafka's VerificationGuard): the leader asks
// the coordinator whether the partition is in the producer's transaction,
// and appends only if the guard it started with is still the partition's.
// A marker for the producer drops it, so a transaction that ended while
// the coordinator was asked cannot be reopened by the late append.
type VerificationGuard struct {
	producerEpoch int16
	leaderEpoch   int32
	// verified: a batch was appended under the guard, so the producer's
	// transaction is open here and its next batches need no verification.
	verified bool
}

// StartTxnVerification returns the guard under which a transactional
// batch of producer pid at epoch is appended, and whether the
// coordinator must be asked first: not when a batch of the same producer
// epoch was appended under it in this leader epoch (Kafka skips producers
// with a transaction ongoing in the log). A guard of the same epoch still
// being verified is shared, as Kafka's VerificationStateEntry is; an
// older one is replaced.
func (p *Partition) StartTxnVerification(pid int64, epoch int16) (g *VerificationGuard, ask bool) {
	le := p.leaderEpoch.Load()
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	if g := p.verifying[pid]; g != nil && g.producerEpoch == epoch && g.leaderEpoch == le {
		return g, !g.verified
	}
	if p.verifying == nil {
		p.verifying = map[int64]*VerificationGuard{}
	}
	g = &VerificationGuard{producerEpoch: epoch, leaderEpoch: le}
	p.verifying[pid] = g
	return g, true
}

// AbandonTxnVerification forgets g when the coordinator refused it, so
// the state of producers that never append does not linger.
func (p *Partition) AbandonTxnVerification(pid int64, g *VerificationGuard) {
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	if p.verifying[pid] == g && !g.verified {
		delete(p.verifying, pid)
	}
}

// AppendVerified appends a transactional batch of producer pid as
// AppendAsLeader does, if g is still the producer's guard
// (ErrTxnNotVerified otherwise, nothing appended), and marks it verified.
// It and AppendMarker run one at a time, so a marker either precedes the
// append's check or follows the append.
func (p *Partition) AppendVerified(leaderEpoch int32, pid int64, g *VerificationGuard, batches []record.Batch, now int64) (local.AppendResult, error) {
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	if p.verifying[pid] != g || g.leaderEpoch != leaderEpoch {
		return local.AppendResult{}, fmt.Errorf("append to %s-%d: producer %d: %w", p.Topic, p.Index, pid, ErrTxnNotVerified)
	}
	res, err := p.AppendAsLeader(leaderEpoch, batches, now)
	if err == nil {
		g.verified = true
	}
	return res, err
}

// endTxnVerification drops producer pid's guard as its marker is
// written. p.txnMu is held.
func (p *Partition) endTxnVerification(pid int64) {
	delete(p.verifying, pid)
}
