package broker

import (
	"slices"
	"testing"

	"github.com/strata-broker/strata/metadata"
)

// TestHandOverState: leadership goes to the first other live ISR member
// in replica order, the stopping broker leaves the ISR, both epochs grow;
// with no such member nothing moves.
func TestHandOverState(t *testing.T) {
	s := metadata.PartitionState{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 3, 2}, LeaderEpoch: 4, PartitionEpoch: 9}
	alive := func(id int32) bool { return id != 2 }
	next, ok := handOverState(s, 1, alive)
	if !ok || next.Leader != 3 || !slices.Equal(next.ISR, []int32{3, 2}) || next.LeaderEpoch != 5 || next.PartitionEpoch != 10 {
		t.Fatalf("hand over: %+v ok %v", next, ok)
	}
	if !slices.Equal(s.ISR, []int32{1, 3, 2}) {
		t.Fatalf("input modified: %+v", s)
	}
	if _, ok := handOverState(metadata.PartitionState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1}}, 1, alive); ok {
		t.Fatal("handed over to a replica outside the ISR")
	}
	if _, ok := handOverState(metadata.PartitionState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 2}}, 1, alive); ok {
		t.Fatal("handed over to a dead replica")
	}
}
