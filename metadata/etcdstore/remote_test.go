package etcdstore

import (
	"errors"
	"testing"

	"github.com/strata-broker/strata/metadata"
)

func TestRemoteSegmentsFencedByLeaderEpoch(t *testing.T) {
	s := openStore(t)
	ctx := testCtx(t)
	id := metadata.TopicID{9}
	if err := s.PutRemoteSegment(ctx, id, 0, "b", []byte("2"), 3); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRemoteSegment(ctx, id, 0, "a", []byte("1"), 3); err != nil {
		t.Fatal(err)
	}
	if err := s.PutRemoteSegment(ctx, id, 1, "other", []byte("x"), 1); err != nil {
		t.Fatal(err) // fences are per partition
	}
	if err := s.PutRemoteSegment(ctx, id, 0, "c", []byte("3"), 2); !errors.Is(err, ErrRemoteFenced) {
		t.Fatalf("older epoch: %v", err)
	}
	if err := s.PutRemoteSegment(ctx, id, 0, "b", nil, 4); err != nil {
		t.Fatal(err)
	}
	names, vals, err := s.ListRemoteSegments(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != "a" || string(vals[0]) != "1" {
		t.Fatalf("got %v %q", names, vals)
	}
	if err := s.PutRemoteSegment(ctx, id, 0, "bad/name", []byte("x"), 5); err == nil {
		t.Fatal("a name with a slash was accepted")
	}
}

func TestClaimRemoteSegmentsFencesOlderEpochs(t *testing.T) {
	s := openStore(t)
	ctx := testCtx(t)
	id := metadata.TopicID{8}
	if err := s.PutRemoteSegment(ctx, id, 0, "a", []byte("1"), 1); err != nil {
		t.Fatal(err)
	}
	names, vals, err := s.ClaimRemoteSegments(ctx, id, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != "a" || string(vals[0]) != "1" {
		t.Fatalf("claimed %v %q", names, vals)
	}
	if err := s.PutRemoteSegment(ctx, id, 0, "late", []byte("2"), 1); !errors.Is(err, ErrRemoteFenced) {
		t.Fatalf("epoch-1 write after the epoch-2 claim: %v", err)
	}
	if _, _, err := s.ClaimRemoteSegments(ctx, id, 0, 1); !errors.Is(err, ErrRemoteFenced) {
		t.Fatalf("epoch-1 claim after epoch 2: %v", err)
	}
	if _, _, err := s.ClaimRemoteSegments(ctx, id, 0, 2); err != nil {
		t.Fatalf("reclaim at the same epoch: %v", err)
	}
}
