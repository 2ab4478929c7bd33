package controller

import (
	"errors"
	"slices"

	"github.com/strata-broker/strata/metadata"
)

// Election outcomes that are not state changes (Kafka's ElectLeaders codes).
var (
	// ErrElectionNotNeeded: the partition already has the leader asked for
	// (ELECTION_NOT_NEEDED).
	ErrElectionNotNeeded = errors.New("controller: election not needed")
	// ErrPreferredLeaderNotAvailable: the first replica is dead or out of
	// the ISR (PREFERRED_LEADER_NOT_AVAILABLE).
	ErrPreferredLeaderNotAvailable = errors.New("controller: preferred leader not available")
	// ErrEligibleLeadersNotAvailable: no replica may become leader
	// (ELIGIBLE_LEADERS_NOT_AVAILABLE).
	ErrEligibleLeadersNotAvailable = errors.New("controller: no eligible leader available")
)

// Liveness is the brokers as the election rules see them, a snapshot of
// the cache's registrations: a broker is alive while registered, and
// eligible — it may lead, stay in an ISR or be elected into one — while
// alive and not in controlled shutdown (metadata.Broker.ShuttingDown), as
// Kafka's controller treats its shuttingDownBrokerIds. The zero value has
// no broker alive.
type Liveness struct {
	eligible map[int32]bool // every live broker: whether it is eligible
}

// LivenessOf snapshots brokers (the cache's live ones).
func LivenessOf(brokers []metadata.Broker) Liveness {
	l := Liveness{eligible: make(map[int32]bool, len(brokers))}
	for _, b := range brokers {
		l.eligible[b.ID] = !b.ShuttingDown
	}
	return l
}

// Alive reports whether broker id is registered.
func (l Liveness) Alive(id int32) bool {
	_, ok := l.eligible[id]
	return ok
}

// Eligible reports whether broker id is alive and not shutting down.
func (l Liveness) Eligible(id int32) bool { return l.eligible[id] }

// Reelect returns the state s must move to now that the brokers are as l
// says, and whether that differs from s:
//
//   - an eligible leader keeps leading; ISR members that are dead or
//     shutting down leave the ISR (which keeps the leader), bumping
//     PartitionEpoch only;
//   - a leader in controlled shutdown hands over to the first replica
//     (in replica order) that is eligible and in the ISR, with the ISR
//     shrunk to its eligible members and both epochs bumped (Kafka's
//     ControlledShutdownPartitionLeaderElectionStrategy); with no such
//     replica it keeps leading as an eligible leader does (never an
//     unclean election on its account);
//   - a dead or missing leader is replaced by the first replica that is
//     eligible and in the ISR; the ISR shrinks to its eligible members;
//     both epochs are bumped;
//   - with none such and unclean, the first eligible replica leads with
//     an ISR of itself (may lose committed records);
//   - with no candidate at all the partition goes offline: Leader =
//     metadata.NoLeader, both epochs bumped, the ISR kept so that the first
//     ISR member to return is elected cleanly. An offline partition stays
//     unchanged until a candidate appears.
//
// No broker in controlled shutdown is ever elected. s is not modified;
// the result shares no slices with it.
func Reelect(s metadata.PartitionState, l Liveness, unclean bool) (metadata.PartitionState, bool) {
	if s.Leader != metadata.NoLeader && l.Alive(s.Leader) {
		if !slices.Contains(s.ISR, s.Leader) {
			return s, false // not ours to repair: the leader manages its ISR
		}
		if !l.Eligible(s.Leader) {
			if next, err := electLeader(s, l, false); err == nil {
				return next, true
			}
		}
		isr := slices.DeleteFunc(slices.Clone(s.ISR), func(r int32) bool { return r != s.Leader && !l.Eligible(r) })
		if len(isr) == len(s.ISR) {
			return s, false
		}
		next := s.Clone()
		next.ISR = isr
		next.PartitionEpoch++
		return next, true
	}
	if next, err := electLeader(s, l, unclean); err == nil {
		return next, true
	}
	if s.Leader == metadata.NoLeader {
		return s, false
	}
	next := s.Clone()
	next.Leader = metadata.NoLeader
	next.LeaderEpoch++
	next.PartitionEpoch++
	return next, true
}

// PreferredLeader moves leadership to the preferred (first) replica when
// it is eligible and in the ISR; ISR unchanged, both epochs bumped. It
// fails with ErrElectionNotNeeded when that replica already leads and
// with ErrPreferredLeaderNotAvailable when it cannot lead.
func PreferredLeader(s metadata.PartitionState, l Liveness) (metadata.PartitionState, error) {
	if len(s.Replicas) == 0 {
		return s, ErrPreferredLeaderNotAvailable
	}
	pref := s.Replicas[0]
	if s.Leader == pref {
		return s, ErrElectionNotNeeded
	}
	if !l.Eligible(pref) || !slices.Contains(s.ISR, pref) {
		return s, ErrPreferredLeaderNotAvailable
	}
	return withLeader(s, pref, slices.Clone(s.ISR)), nil
}

// UncleanLeader elects a leader for a partition whose leader is dead or
// missing: cleanly from the ISR when possible, else the first eligible
// replica (KIP-460's unclean ElectLeaders). It fails with
// ErrElectionNotNeeded when the leader is alive (even in controlled
// shutdown: Reelect moves it cleanly or not at all) and with
// ErrEligibleLeadersNotAvailable when no replica is eligible.
func UncleanLeader(s metadata.PartitionState, l Liveness) (metadata.PartitionState, error) {
	if s.Leader != metadata.NoLeader && l.Alive(s.Leader) {
		return s, ErrElectionNotNeeded
	}
	return electLeader(s, l, true)
}

// electLeader picks a new leader for s: the first eligible ISR member in
// replica order, else (if unclean) the first eligible replica.
func electLeader(s metadata.PartitionState, l Liveness, unclean bool) (metadata.PartitionState, error) {
	for _, r := range s.Replicas {
		if l.Eligible(r) && slices.Contains(s.ISR, r) {
			return withLeader(s, r, eligibleOf(s.ISR, l)), nil
		}
	}
	if unclean {
		for _, r := range s.Replicas {
			if l.Eligible(r) {
				return withLeader(s, r, []int32{r}), nil
			}
		}
	}
	return s, ErrEligibleLeadersNotAvailable
}

// withLeader is s led by leader with ISR isr, both epochs bumped.
func withLeader(s metadata.PartitionState, leader int32, isr []int32) metadata.PartitionState {
	next := s.Clone()
	next.Leader = leader
	next.ISR = isr
	next.LeaderEpoch++
	next.PartitionEpoch++
	return next
}

// eligibleOf returns the eligible members of ids, in order, in a fresh
// slice.
func eligibleOf(ids []int32, l Liveness) []int32 {
	out := make([]int32, 0, len(ids))
	for _, id := range ids {
		if l.Eligible(id) {
			out = append(out, id)
		}
	}
	return out
}
