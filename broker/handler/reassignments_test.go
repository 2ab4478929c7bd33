package handler

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Tables of AlterPartitionReassignments and ListPartitionReassignments.
// The clusters run no controller, so requested reassignments stay pending
// as the store holds them.

// reassignment is one partition's target replicas; nil replicas cancels.
type reassignment struct {
	topic     string
	partition int32
	replicas  []int32
}

func reassignReq(rs ...reassignment) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.TimeoutMillis = 5000
		for _, r := range rs {
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = r.topic
			rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			rp.Partition, rp.Replicas = r.partition, r.replicas
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
}

// withReassignments creates topic t (one partition on broker 1) and
// requests rs.
func withReassignments(rs ...reassignment) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		create := s.do(t, createTopicsReq(false, manualTopic("t", []int32{1}))(t, s)).(*kmsg.CreateTopicsResponse)
		wantCodes(t, errorCodes(create), nil)
		if len(rs) == 0 {
			return
		}
		resp := s.do(t, reassignReq(rs...)(t, s)).(*kmsg.AlterPartitionAssignmentsResponse)
		wantCodes(t, errorCodes(resp), nil)
	}
}

// wantPending checks the reassignment the store holds for t-0.
func wantPending(t *testing.T, s *scene, target, original []int32) {
	t.Helper()
	rs, err := s.env.Store.Reassignments(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if target == nil {
		if len(rs) != 0 {
			t.Fatalf("reassignments %+v, want none", rs)
		}
		return
	}
	if len(rs) != 1 || rs[0].Topic != "t" || rs[0].Partition != 0 || !slices.Equal(rs[0].Target, target) || !slices.Equal(rs[0].Original, original) {
		t.Fatalf("reassignments %+v, want t-0 from %v to %v", rs, original, target)
	}
}

func TestAlterPartitionReassignments(t *testing.T) {
	two := sceneOpts{brokers: 2}
	pending := func(target, original []int32) func(*testing.T, *scene, *kmsg.AlterPartitionAssignmentsResponse) {
		return func(t *testing.T, s *scene, _ *kmsg.AlterPartitionAssignmentsResponse) {
			wantPending(t, s, target, original)
		}
	}
	noCodes := []int16{0, codeInvalidAssignment}
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.AlterPartitionAssignmentsResponse]{
		{
			name: "reassign", scene: two, setup: withReassignments(),
			req: reassignReq(reassignment{"t", 0, []int32{2}}), want: pending([]int32{2}, []int32{1}),
		},
		{
			name: "replace a pending target", scene: two, setup: withReassignments(reassignment{"t", 0, []int32{2}}),
			req: reassignReq(reassignment{"t", 0, []int32{2, 1}}), want: pending([]int32{2, 1}, []int32{1}),
		},
		{
			name: "cancel", scene: two, setup: withReassignments(reassignment{"t", 0, []int32{2}}),
			req: reassignReq(reassignment{"t", 0, nil}), want: pending([]int32{1}, []int32{1}),
		},
		{
			name: "cancel without a reassignment", setup: withReassignments(),
			req: reassignReq(reassignment{"t", 0, nil}), codes: []int16{0, kerr.NoReassignmentInProgress.Code},
		},
		{name: "unknown topic", req: reassignReq(reassignment{"nope", 0, []int32{1}}), codes: []int16{0, codeUnknownTopic}},
		{name: "unknown partition", setup: withReassignments(), req: reassignReq(reassignment{"t", 1, []int32{1}}), codes: []int16{0, codeUnknownTopic}},
		{
			name: "empty replica list", setup: withReassignments(), req: reassignReq(reassignment{"t", 0, []int32{}}),
			codes: noCodes, want: pending(nil, nil),
		},
		{
			name: "replica named twice", scene: two, setup: withReassignments(),
			req: reassignReq(reassignment{"t", 0, []int32{2, 2}}), codes: noCodes, want: pending(nil, nil),
		},
		{
			name: "unknown broker", setup: withReassignments(),
			req: reassignReq(reassignment{"t", 0, []int32{1, 7}}), codes: noCodes, want: pending(nil, nil),
		},
		{
			name: "per partition", scene: two, setup: withReassignments(),
			req:   reassignReq(reassignment{"t", 0, []int32{2}}, reassignment{"t", 3, []int32{2}}),
			codes: []int16{0, 0, codeUnknownTopic}, want: pending([]int32{2}, []int32{1}),
		},
	})
}

// listReq asks for the partitions of topic t (none: every reassignment).
func listReq(partitions ...int32) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrListPartitionReassignmentsRequest()
		req.TimeoutMillis = 5000
		if partitions != nil {
			rt := kmsg.NewListPartitionReassignmentsRequestTopic()
			rt.Topic, rt.Partitions = "t", partitions
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
}

// listed checks the answer: t-0 moving from broker 1 to 2, or nothing.
func listed(moving bool) func(*testing.T, *scene, *kmsg.ListPartitionReassignmentsResponse) {
	return func(t *testing.T, _ *scene, r *kmsg.ListPartitionReassignmentsResponse) {
		if !moving {
			if len(r.Topics) != 0 {
				t.Fatalf("listed %+v, want nothing", r.Topics)
			}
			return
		}
		if len(r.Topics) != 1 || r.Topics[0].Topic != "t" || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("listed %+v, want t-0", r.Topics)
		}
		p := r.Topics[0].Partitions[0]
		if p.Partition != 0 || !slices.Equal(p.Replicas, []int32{1}) || !slices.Equal(p.AddingReplicas, []int32{2}) || !slices.Equal(p.RemovingReplicas, []int32{1}) {
			t.Fatalf("t-0 listed as %+v", p)
		}
	}
}

func TestListPartitionReassignments(t *testing.T) {
	two := sceneOpts{brokers: 2}
	moving := withReassignments(reassignment{"t", 0, []int32{2}})
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.ListPartitionReassignmentsResponse]{
		{name: "all", scene: two, setup: moving, req: listReq(), want: listed(true)},
		{name: "asked for", scene: two, setup: moving, req: listReq(0, 1), want: listed(true)},
		{name: "none pending", setup: withReassignments(), req: listReq(), want: listed(false)},
		{name: "partition not moving", scene: two, setup: moving, req: listReq(1), want: listed(false)},
	})
}
