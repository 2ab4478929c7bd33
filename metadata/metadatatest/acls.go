package metadatatest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/strata-broker/strata/metadata"
)

// testACLs: ACLs are created idempotently and deleted (missing ones
// ignored), seen by every handle's cache (also one opened later) with
// the version moving only when the set does; names with '/', '%' and
// spaces round-trip; more ACLs than one txn takes go in; a non-concrete
// ACL is refused and nothing of its batch is written.
func testACLs(t *testing.T, cl Cluster) {
	s, o := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	lit := metadata.ACL{ResourceType: metadata.ACLResourceTopic, ResourceName: "team/a b%2F", PatternType: metadata.ACLPatternLiteral,
		Principal: "User:alice/x", Host: "*", Operation: metadata.ACLOpRead, Permission: metadata.ACLAllow}
	pre := metadata.ACL{ResourceType: metadata.ACLResourceGroup, ResourceName: "g-", PatternType: metadata.ACLPatternPrefixed,
		Principal: "User:*", Host: "127.0.0.1", Operation: metadata.ACLOpAll, Permission: metadata.ACLDeny}
	_, v0 := o.Cache().ACLs()
	rev, err := s.CreateACLs(ctx, []metadata.ACL{lit, pre, lit})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := o.Cache().WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	got, v1 := o.Cache().ACLs()
	if want := []metadata.ACL{lit, pre}; !slices.Equal(got, want) || v1 == v0 {
		t.Fatalf("other handle sees %+v (version %d→%d), want %+v", got, v0, v1, want)
	}
	// Creating again changes nothing.
	rev, err = s.CreateACLs(ctx, []metadata.ACL{pre})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Cache().WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if got, v2 := o.Cache().ACLs(); len(got) != 2 || v2 != v1 {
		t.Fatalf("re-creating: %+v, version %d→%d", got, v1, v2)
	}
	bad := lit
	bad.Operation = metadata.ACLOpAny
	if _, err := s.CreateACLs(ctx, []metadata.ACL{pre, bad}); err == nil {
		t.Fatal("an ACL with operation ANY was stored")
	}
	late := cl.Open(t)
	if got, _ := late.Cache().ACLs(); !slices.Equal(got, []metadata.ACL{lit, pre}) {
		t.Fatalf("a new handle loaded %+v", got)
	}
	missing := pre
	missing.Host = "10.0.0.1"
	rev, err = s.DeleteACLs(ctx, []metadata.ACL{lit, missing})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*metadata.Cache{s.Cache(), o.Cache(), late.Cache()} {
		if err := c.WaitRevision(ctx, rev); err != nil {
			t.Fatal(err)
		}
		if got, _ := c.ACLs(); !slices.Equal(got, []metadata.ACL{pre}) {
			t.Fatalf("after delete: %+v", got)
		}
	}
	// More than one etcd txn takes (128 ops).
	many := make([]metadata.ACL, 300)
	for i := range many {
		many[i] = lit
		many[i].ResourceName = fmt.Sprintf("t%03d", i)
	}
	if rev, err = s.CreateACLs(ctx, many); err != nil {
		t.Fatal(err)
	}
	if err := o.Cache().WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if got, _ := o.Cache().ACLs(); len(got) != 301 {
		t.Fatalf("%d ACLs after creating 300 more", len(got))
	}
	if rev, err = s.DeleteACLs(ctx, append(many, pre)); err != nil {
		t.Fatal(err)
	}
	if err := o.Cache().WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if got, _ := o.Cache().ACLs(); len(got) != 0 {
		t.Fatalf("%d ACLs left", len(got))
	}
}
