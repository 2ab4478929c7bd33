package metadatatest

import (
	"bytes"
	"testing"

	"github.com/strata-broker/strata/metadata"
)

// testScramCredentials: a user's SCRAM credentials are replaced whole,
// removed by an empty set, seen by every handle's cache (also one opened
// later), and user names with a slash or spaces round-trip.
func testScramCredentials(t *testing.T, cl Cluster) {
	s, o := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	cred := metadata.ScramCredential{Salt: []byte("salt"), Iterations: 4096, StoredKey: []byte("stored"), ServerKey: []byte("server")}
	const user = "team/alice smith"
	rev, err := s.SetScramCredentials(ctx, user, map[string]metadata.ScramCredential{"SCRAM-SHA-256": cred})
	if err != nil {
		t.Fatalf("set: %v", err)
	}
	if err := o.Cache().WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	got, ok := o.Cache().ScramCredential(user, "SCRAM-SHA-256")
	if !ok || got.Iterations != 4096 || !bytes.Equal(got.Salt, cred.Salt) || !bytes.Equal(got.StoredKey, cred.StoredKey) || !bytes.Equal(got.ServerKey, cred.ServerKey) {
		t.Fatalf("other handle sees %+v %v", got, ok)
	}
	if _, ok := o.Cache().ScramCredential(user, "SCRAM-SHA-512"); ok {
		t.Fatal("a mechanism never set is there")
	}
	// Replaced whole.
	if _, err := s.SetScramCredentials(ctx, user, map[string]metadata.ScramCredential{"SCRAM-SHA-512": cred}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Cache().ScramCredential(user, "SCRAM-SHA-256"); ok {
		t.Fatal("SCRAM-SHA-256 left after replacing")
	}
	late := cl.Open(t)
	if _, ok := late.Cache().ScramCredential(user, "SCRAM-SHA-512"); !ok || len(late.Cache().ScramUsers()) != 1 {
		t.Fatalf("a new handle loaded %v", late.Cache().ScramUsers())
	}
	rev, err = s.SetScramCredentials(ctx, user, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*metadata.Cache{s.Cache(), o.Cache(), late.Cache()} {
		if err := c.WaitRevision(ctx, rev); err != nil {
			t.Fatal(err)
		}
		if len(c.ScramUsers()) != 0 {
			t.Fatalf("users left after removing: %v", c.ScramUsers())
		}
	}
	if _, err := s.SetScramCredentials(ctx, "", map[string]metadata.ScramCredential{"SCRAM-SHA-256": cred}); err == nil {
		t.Fatal("empty user name accepted")
	}
}
