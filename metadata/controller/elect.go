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

// Reelect returns the state s must move to now that exactly the brokers
// for which alive is true are live, and whether that differs from s:
//
//   - a live leader keeps leading; dead brokers leave the ISR (which keeps
//     the leader), bumping PartitionEpoch only;
//   - a dead or missing leader is replaced by the first replica in replica
//     order that is alive and in the ISR; the ISR shrinks to its live
//     members; both epochs are bumped;
//   - with none such and unclean, the first live replica leads with an ISR
//     of itself (may lose committed records);
//   - with no candidate at all the partition goes offline: Leader =
//     metadata.NoLeader, both epochs bumped, the ISR kept so that the first
//     ISR member to return is elected cleanly. An offline partition stays
//     unchanged until a candidate appears.
//
// s is not modified; the result shares no slices with it.
func Reelect(s metadata.PartitionState, alive func(int32) bool, unclean bool) (metadata.PartitionState, bool) {
	if s.Leader != metadata.NoLeader && alive(s.Leader) {
		if !slices.Contains(s.ISR, s.Leader) {
			return s, false // not ours to repair: the leader manages its ISR
		}
		isr := liveOf(s.ISR, alive)
		if len(isr) == len(s.ISR) {
			return s, false
		}
		next := s.Clone()
		next.ISR = isr
		next.PartitionEpoch++
		return next, true
	}
	if next, err := electLeader(s, alive, unclean); err == nil {
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
// it is alive and in the ISR; ISR unchanged, both epochs bumped. It fails
// with ErrElectionNotNeeded when that replica already leads and with
// ErrPreferredLeaderNotAvailable when it cannot lead.
func PreferredLeader(s metadata.PartitionState, alive func(int32) bool) (metadata.PartitionState, error) {
	if len(s.Replicas) == 0 {
		return s, ErrPreferredLeaderNotAvailable
	}
	pref := s.Replicas[0]
	if s.Leader == pref {
		return s, ErrElectionNotNeeded
	}
	if !alive(pref) || !slices.Contains(s.ISR, pref) {
		return s, ErrPreferredLeaderNotAvailable
	}
	return withLeader(s, pref, slices.Clone(s.ISR)), nil
}

// UncleanLeader elects a leader for a partition whose leader is dead or
// missing: cleanly from the ISR when possible, else the first live
// replica (KIP-460's unclean ElectLeaders). It fails with
// ErrElectionNotNeeded when the leader is alive and with
// ErrEligibleLeadersNotAvailable when no replica is.
func UncleanLeader(s metadata.PartitionState, alive func(int32) bool) (metadata.PartitionState, error) {
	if s.Leader != metadata.NoLeader && alive(s.Leader) {
		return s, ErrElectionNotNeeded
	}
	return electLeader(s, alive, true)
}

// electLeader picks a new leader for s: the first live ISR member in
// replica order, else (if unclean) the first live replica.
func electLeader(s metadata.PartitionState, alive func(int32) bool, unclean bool) (metadata.PartitionState, error) {
	for _, r := range s.Replicas {
		if alive(r) && slices.Contains(s.ISR, r) {
			return withLeader(s, r, liveOf(s.ISR, alive)), nil
		}
	}
	if unclean {
		for _, r := range s.Replicas {
			if alive(r) {
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

// liveOf returns the live members of ids, in order, in a fresh slice.
func liveOf(ids []int32, alive func(int32) bool) []int32 {
	out := make([]int32, 0, len(ids))
	for _, id := range ids {
		if alive(id) {
			out = append(out, id)
		}
	}
	return out
}
