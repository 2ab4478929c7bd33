package controller

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/strata-broker/strata/metadata"
)

// ErrInvalidReplicationFactor: the replication factor is below 1 or above
// the number of live brokers (INVALID_REPLICATION_FACTOR).
var ErrInvalidReplicationFactor = errors.New("controller: invalid replication factor")

// Place assigns replicas for partitions 0..partitions-1 of a new topic;
// see PlaceRange.
func Place(brokers []metadata.Broker, partitions int32, rf int16, startIndex int) (map[int32]metadata.PartitionState, error) {
	return PlaceRange(brokers, 0, partitions, rf, startIndex)
}

// PlaceRange assigns rf replicas to each partition first..first+count-1
// over brokers (the live ones; duplicates by id are ignored), with
// Kafka's rack-aware scheme:
//
//   - brokers are ordered rack-alternated: racks by name, then the i-th
//     broker (by id) of every rack in turn; brokers without a rack form
//     the rack "" (so with no racks at all this is plain id order and the
//     scheme is Kafka's rack-unaware one);
//   - partition p's leader is broker (p + startIndex) mod n of that order,
//     so leaders are spread evenly (counts differ by at most one);
//   - its followers are found by walking the order from the leader with a
//     shift that grows every n partitions (startIndex + p/n, times the
//     number of racks), taking a broker only if it holds no replica of p
//     yet and its rack holds none unless every rack already does — so a
//     partition spans min(rf, racks) racks.
//
// startIndex < 0 picks a random start, as Kafka does, to spread several
// topics' leaders; a fixed startIndex makes the result deterministic.
// Every returned state is led by its first replica with all replicas in
// the ISR and epochs 0. It fails with ErrInvalidReplicationFactor when rf
// < 1 or rf > the live brokers, and metadata.ErrInvalidPartitions when
// count < 1 or the range leaves int32.
func PlaceRange(brokers []metadata.Broker, first, count int32, rf int16, startIndex int) (map[int32]metadata.PartitionState, error) {
	if count < 1 || first < 0 || int64(first)+int64(count) > 1<<31 {
		return nil, fmt.Errorf("controller: place partitions %d..%d: %w", first, int64(first)+int64(count)-1, metadata.ErrInvalidPartitions)
	}
	order, numRacks := rackAlternated(brokers)
	n := len(order)
	if rf < 1 || int(rf) > n {
		return nil, fmt.Errorf("controller: replication factor %d with %d live brokers: %w", rf, n, ErrInvalidReplicationFactor)
	}
	if startIndex < 0 {
		startIndex = rand.IntN(n)
	}
	startIndex %= n
	out := make(map[int32]metadata.PartitionState, count)
	for i := range count {
		p := first + i
		lead := (int(p) + startIndex) % n
		shift := (startIndex + int(p)/n) * numRacks
		replicas, err := followersOf(order, numRacks, lead, shift, int(rf))
		if err != nil {
			return nil, fmt.Errorf("controller: place partition %d: %w", p, err)
		}
		out[p] = metadata.PartitionState{Replicas: replicas, Leader: replicas[0], ISR: slices.Clone(replicas)}
	}
	return out, nil
}

// followersOf returns the replica list of one partition: order[lead]
// followed by rf-1 brokers chosen as PlaceRange describes.
func followersOf(order []metadata.Broker, numRacks, lead, shift, rf int) ([]int32, error) {
	n := len(order)
	replicas := []int32{order[lead].ID}
	racks := map[string]bool{order[lead].Rack: true}
	// Each rf-1 pick is found within n-1 steps (the walk visits every
	// other broker once per n-1 steps), so this bound is never reached.
	for k := 0; len(replicas) < rf; k++ {
		if k >= n*rf {
			return nil, fmt.Errorf("no eligible broker after %d steps (internal error)", k)
		}
		b := order[(lead+1+(shift+k)%(n-1))%n]
		if slices.Contains(replicas, b.ID) || racks[b.Rack] && len(racks) < numRacks {
			continue
		}
		replicas = append(replicas, b.ID)
		racks[b.Rack] = true
	}
	return replicas, nil
}

// rackAlternated orders brokers for placement (see PlaceRange) and
// counts their racks. Duplicate ids keep the first occurrence.
func rackAlternated(brokers []metadata.Broker) ([]metadata.Broker, int) {
	byID := slices.Clone(brokers)
	slices.SortStableFunc(byID, func(a, b metadata.Broker) int { return cmp.Compare(a.ID, b.ID) })
	byID = slices.CompactFunc(byID, func(a, b metadata.Broker) bool { return a.ID == b.ID })
	perRack := make(map[string][]metadata.Broker)
	for _, b := range byID {
		perRack[b.Rack] = append(perRack[b.Rack], b)
	}
	racks := make([]string, 0, len(perRack))
	for r := range perRack {
		racks = append(racks, r)
	}
	slices.Sort(racks)
	order := make([]metadata.Broker, 0, len(byID))
	for i := 0; len(order) < len(byID); i++ {
		for _, r := range racks {
			if i < len(perRack[r]) {
				order = append(order, perRack[r][i])
			}
		}
	}
	return order, len(racks)
}
