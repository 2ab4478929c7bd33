package controller

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/strata-broker/strata/metadata"
)

// brokersOf builds brokers with ids and racks (racks may be shorter:
// the rest have none).
func brokersOf(ids []int32, racks ...string) []metadata.Broker {
	out := make([]metadata.Broker, len(ids))
	for i, id := range ids {
		out[i] = metadata.Broker{ID: id, Host: "127.0.0.1", Port: 9000 + id}
		if i < len(racks) {
			out[i].Rack = racks[i]
		}
	}
	return out
}

func replicasOf(m map[int32]metadata.PartitionState) map[int32][]int32 {
	out := make(map[int32][]int32, len(m))
	for p, s := range m {
		out[p] = s.Replicas
	}
	return out
}

// TestPlaceRackUnaware pins the rack-unaware layout (Kafka's own example
// for 5 brokers, 10 partitions, RF 3, start 0).
func TestPlaceRackUnaware(t *testing.T) {
	got, err := Place(brokersOf([]int32{4, 3, 2, 1, 0}), 10, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32][]int32{
		0: {0, 1, 2}, 1: {1, 2, 3}, 2: {2, 3, 4}, 3: {3, 4, 0}, 4: {4, 0, 1},
		5: {0, 2, 3}, 6: {1, 3, 4}, 7: {2, 4, 0}, 8: {3, 0, 1}, 9: {4, 1, 2},
	}
	if r := replicasOf(got); !reflect.DeepEqual(r, want) {
		t.Fatalf("Place = %v\nwant   %v", r, want)
	}
	// PlaceRange continues the same layout.
	tail, err := PlaceRange(brokersOf([]int32{0, 1, 2, 3, 4}), 7, 3, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r := replicasOf(tail); !reflect.DeepEqual(r, map[int32][]int32{7: want[7], 8: want[8], 9: want[9]}) {
		t.Fatalf("PlaceRange(7..9) = %v", r)
	}
}

func TestPlaceErrors(t *testing.T) {
	three := brokersOf([]int32{1, 2, 3})
	for _, tc := range []struct {
		brokers []metadata.Broker
		n       int32
		rf      int16
		want    error
	}{
		{three, 3, 4, ErrInvalidReplicationFactor},
		{three, 3, 0, ErrInvalidReplicationFactor},
		{three, 3, -1, ErrInvalidReplicationFactor},
		{nil, 1, 1, ErrInvalidReplicationFactor},
		{append(three, three...), 3, 4, ErrInvalidReplicationFactor}, // duplicates count once
		{three, 0, 1, metadata.ErrInvalidPartitions},
		{three, -2, 1, metadata.ErrInvalidPartitions},
	} {
		if _, err := Place(tc.brokers, tc.n, tc.rf, -1); !errors.Is(err, tc.want) {
			t.Errorf("Place(%d brokers, %d, rf %d) = %v, want %v", len(tc.brokers), tc.n, tc.rf, err, tc.want)
		}
	}
	if _, err := PlaceRange(three, 1<<31-1, 2, 1, 0); !errors.Is(err, metadata.ErrInvalidPartitions) {
		t.Errorf("range past int32: %v", err)
	}
}

// TestPlaceProperties checks, over random clusters, that every placement
// is valid, leaders are spread evenly, each partition spans min(rf, racks)
// racks, and a fixed start index is deterministic.
func TestPlaceProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		nb := 1 + rng.IntN(12)
		numRacks := rng.IntN(5) // 0: no racks
		ids := rng.Perm(100)[:nb]
		brokers := make([]metadata.Broker, nb)
		rackOf := map[int32]string{}
		for j, id := range ids {
			brokers[j] = metadata.Broker{ID: int32(id), Host: "h", Port: 1}
			if numRacks > 0 {
				brokers[j].Rack = fmt.Sprintf("r%d", rng.IntN(numRacks))
			}
			rackOf[int32(id)] = brokers[j].Rack
		}
		racks := len(slices.Compact(slices.Sorted(maps.Values(rackOf))))
		n := int32(1 + rng.IntN(60))
		rf := int16(1 + rng.IntN(nb))
		start := rng.IntN(nb+1) - 1
		name := fmt.Sprintf("case %d: %d brokers, %d racks, %d partitions, rf %d, start %d", i, nb, racks, n, rf, start)

		got, err := Place(brokers, n, rf, start)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != int(n) {
			t.Fatalf("%s: %d partitions", name, len(got))
		}
		leaders := map[int32]int{}
		for p := range n {
			s, ok := got[p]
			if !ok {
				t.Fatalf("%s: partition %d missing", name, p)
			}
			if err := s.Validate(); err != nil || len(s.Replicas) != int(rf) || s.Leader != s.Replicas[0] ||
				!slices.Equal(s.ISR, s.Replicas) || s.LeaderEpoch != 0 || s.PartitionEpoch != 0 {
				t.Fatalf("%s: partition %d = %+v (%v)", name, p, s, err)
			}
			used := map[string]bool{}
			for _, r := range s.Replicas {
				rack, ok := rackOf[r]
				if !ok {
					t.Fatalf("%s: partition %d on unknown broker %d", name, p, r)
				}
				used[rack] = true
			}
			if len(used) != min(int(rf), racks) {
				t.Fatalf("%s: partition %d %v spans %d racks, want %d", name, p, s.Replicas, len(used), min(int(rf), racks))
			}
			leaders[s.Leader]++
		}
		lo, hi := int(n), 0
		for _, b := range brokers {
			lo, hi = min(lo, leaders[b.ID]), max(hi, leaders[b.ID])
		}
		if hi-lo > 1 {
			t.Fatalf("%s: leader counts %v uneven", name, leaders)
		}
		if start >= 0 {
			reversed := slices.Clone(brokers)
			slices.Reverse(reversed)
			again, _ := Place(reversed, n, rf, start)
			if !reflect.DeepEqual(again, got) {
				t.Fatalf("%s: not deterministic", name)
			}
		}
	}
}
