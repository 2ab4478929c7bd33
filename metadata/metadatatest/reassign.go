package metadatatest

import (
	"slices"
	"testing"

	"github.com/strata-broker/strata/metadata"
)

// testReassignments: requests are recorded, replaced and listed by every
// handle; deleting with a stale listing keeps a newer request.
func testReassignments(t *testing.T, cl Cluster) {
	s, other := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	if rs, err := other.Reassignments(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("Reassignments at start = %v, %v", rs, err)
	}
	req := metadata.Reassignment{Topic: "t", Partition: 1, Target: []int32{2, 3}, Original: []int32{1}}
	if err := s.PutReassignment(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := s.PutReassignment(ctx, metadata.Reassignment{Topic: "u", Partition: 0, Target: []int32{1}, Original: []int32{2}}); err != nil {
		t.Fatal(err)
	}
	req.Target[0] = 9 // the store kept its own copy
	rs, err := other.Reassignments(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(rs, func(a, b metadata.Reassignment) int { return int(a.Partition - b.Partition) })
	if len(rs) != 2 || rs[1].Topic != "t" || rs[1].Partition != 1 || !slices.Equal(rs[1].Target, []int32{2, 3}) ||
		!slices.Equal(rs[1].Original, []int32{1}) || rs[1].Revision <= 0 {
		t.Fatalf("Reassignments = %+v", rs)
	}
	first := rs[1]

	// Replace the target; the original stays as the caller passes it.
	repl := first
	repl.Target = []int32{3}
	if err := other.PutReassignment(ctx, repl); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteReassignment(ctx, first); err != nil { // stale: keeps the newer request
		t.Fatalf("stale DeleteReassignment: %v", err)
	}
	cur := find(t, s, "t", 1)
	if !slices.Equal(cur.Target, []int32{3}) || cur.Revision <= first.Revision {
		t.Fatalf("request after a stale delete = %+v", cur)
	}
	if err := s.DeleteReassignment(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if rs, err := other.Reassignments(ctx); err != nil || len(rs) != 1 || rs[0].Topic != "u" {
		t.Fatalf("Reassignments after delete = %+v, %v", rs, err)
	}
	if err := s.DeleteReassignment(ctx, cur); err != nil {
		t.Fatalf("deleting a missing request: %v", err)
	}
	if err := s.PutReassignment(ctx, metadata.Reassignment{Topic: "a/b", Target: []int32{1}}); err == nil {
		t.Fatal("request for an invalid topic name accepted")
	}
}

// find returns the pending request of topic-partition.
func find(t *testing.T, s metadata.Store, topic string, p int32) metadata.Reassignment {
	t.Helper()
	rs, err := s.Reassignments(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Topic == topic && r.Partition == p {
			return r
		}
	}
	t.Fatalf("no reassignment of %s-%d in %+v", topic, p, rs)
	return metadata.Reassignment{}
}
