package controller

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
)

// TestReassignStep walks the pure reassignment sequence from [1 2] to [3 2].
func TestReassignStep(t *testing.T) {
	all := aliveOf(1, 2, 3)
	s := state(1, []int32{1, 2}, []int32{1, 2})
	next, changed, done := ReassignStep(s, []int32{3, 2}, all)
	if !changed || done || !slices.Equal(next.Replicas, []int32{3, 2, 1}) || next.PartitionEpoch != 1 || next.LeaderEpoch != 0 {
		t.Fatalf("step 1: %+v changed %v done %v", next, changed, done)
	}
	if _, changed, done := ReassignStep(next, []int32{3, 2}, all); changed || done {
		t.Fatalf("step 2 went on before 3 joined the ISR")
	}
	next.ISR = []int32{1, 2, 3}
	next, changed, _ = ReassignStep(next, []int32{3, 2}, all)
	if !changed || next.Leader != 3 || next.LeaderEpoch != 1 || next.PartitionEpoch != 2 {
		t.Fatalf("step 2: %+v", next)
	}
	next, changed, _ = ReassignStep(next, []int32{3, 2}, all)
	if !changed || !slices.Equal(next.Replicas, []int32{3, 2}) || !slices.Equal(next.ISR, []int32{2, 3}) || next.Leader != 3 {
		t.Fatalf("step 3: %+v", next)
	}
	if _, changed, done = ReassignStep(next, []int32{3, 2}, all); changed || !done {
		t.Fatalf("final: changed %v done %v", changed, done)
	}
	// A removed leader with no live target replica keeps leading.
	s = state(1, []int32{3, 1}, []int32{1, 3})
	if _, changed, _ := ReassignStep(s, []int32{3}, aliveOf(1)); changed {
		t.Fatal("leadership moved to a dead replica")
	}
}

// TestRunReassignments drives a request stored in etcd through the elected
// controller, playing the leader's ISR expansion in between.
func TestRunReassignments(t *testing.T) {
	mem := newMem()
	ctl, brokers := mem.open(t), mem.open(t)
	ctx := testCtx(t)
	registerAll(t, brokers, nil, 1, 2, 3)
	if _, err := brokers.CreateTopic(ctx, metadata.Topic{Name: "t", Partitions: map[int32]metadata.PartitionState{
		0: state(1, []int32{1}, []int32{1}),
	}}); err != nil {
		t.Fatal(err)
	}
	r := start(t, ctl, 9, Options{})
	waitUntil(t, "elected", r.IsLeader, r.Changed)
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { r.RunReassignments(rctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	if err := brokers.PutReassignment(ctx, metadata.Reassignment{Topic: "t", Partition: 0, Target: []int32{2, 3}, Original: []int32{1}}); err != nil {
		t.Fatal(err)
	}
	cur := waitPartition(t, ctl, "t", 0, "replicas added", func(s metadata.PartitionState) bool {
		return slices.Equal(s.Replicas, []int32{2, 3, 1})
	})
	next := cur.Clone()
	next.ISR, next.PartitionEpoch = []int32{1, 2, 3}, cur.PartitionEpoch+1
	if _, err := brokers.CompareAndSetPartition(ctx, "t", 0, cur.PartitionEpoch, next); err != nil {
		t.Fatal(err)
	}
	got := waitPartition(t, ctl, "t", 0, "old replica dropped", func(s metadata.PartitionState) bool {
		return slices.Equal(s.Replicas, []int32{2, 3})
	})
	if got.Leader != 2 || !slices.Equal(got.ISR, []int32{2, 3}) {
		t.Fatalf("final state %+v", got)
	}
	// Requests live outside the cache: re-check on a short timer.
	poll := func() <-chan struct{} {
		ch := make(chan struct{})
		time.AfterFunc(reassignPoll/5, func() { close(ch) })
		return ch
	}
	waitUntil(t, "request deleted", func() bool {
		rs, err := brokers.Reassignments(ctx)
		return err == nil && len(rs) == 0
	}, poll)
}
