package metadatatest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/strata-broker/strata/metadata"
)

// listNames lists a partition's remote records as name=value strings.
func listNames(t *testing.T, s metadata.Store, id metadata.TopicID, p int32) []string {
	t.Helper()
	names, values, err := s.ListRemoteSegments(testCtx(t), id, p)
	if err != nil {
		t.Fatalf("ListRemoteSegments: %v", err)
	}
	if len(names) != len(values) {
		t.Fatalf("%d names, %d values", len(names), len(values))
	}
	out := []string{}
	for i, n := range names {
		out = append(out, n+"="+string(values[i]))
	}
	return out
}

func testRemoteSegmentsFenced(t *testing.T, cl Cluster) {
	s, other := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	id := metadata.TopicID{9}
	val := []byte("2")
	if err := s.PutRemoteSegment(ctx, id, 0, "b", val, 3); err != nil {
		t.Fatal(err)
	}
	val[0] = 'x' // the store kept its own copy
	if err := s.PutRemoteSegment(ctx, id, 0, "a", []byte("1"), 3); err != nil {
		t.Fatal(err)
	}
	if err := other.PutRemoteSegment(ctx, id, 1, "other", []byte("x"), 1); err != nil {
		t.Fatal(err) // fences are per partition
	}
	if err := other.PutRemoteSegment(ctx, id, 0, "c", []byte("3"), 2); !errors.Is(err, metadata.ErrRemoteFenced) {
		t.Fatalf("older epoch: %v, want ErrRemoteFenced", err)
	}
	if got, want := listNames(t, other, id, 0), []string{"a=1", "b=2"}; !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
	if err := s.PutRemoteSegment(ctx, id, 0, "b", nil, 4); err != nil {
		t.Fatal(err)
	}
	names, vals, err := other.ListRemoteSegments(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != "a" || string(vals[0]) != "1" {
		t.Fatalf("got %v %q", names, vals)
	}
	vals[0][0] = 'z' // a listed value is the caller's
	if got := listNames(t, s, id, 0); !slices.Equal(got, []string{"a=1"}) {
		t.Fatalf("records %v after changing a listed value", got)
	}
	for _, bad := range []struct {
		name  string
		epoch int32
	}{{"bad/name", 5}, {"", 5}, {"ok", -1}} {
		if err := s.PutRemoteSegment(ctx, id, 0, bad.name, []byte("x"), bad.epoch); err == nil {
			t.Fatalf("PutRemoteSegment(%q, epoch %d) accepted", bad.name, bad.epoch)
		}
	}
	if got := listNames(t, s, metadata.TopicID{7}, 0); len(got) != 0 {
		t.Fatalf("records of an unknown id: %v", got)
	}
}

// testConcurrentRemoteSegments: handles listing, claiming and writing one
// partition's records from many goroutines at once lose no write.
func testConcurrentRemoteSegments(t *testing.T, cl Cluster) {
	handles := []metadata.Store{cl.Open(t), cl.Open(t)}
	ctx := testCtx(t)
	id := metadata.TopicID{6}
	const writers, each = 4, 5
	var wg sync.WaitGroup
	for w := range writers {
		s := handles[w%2]
		wg.Go(func() {
			for i := range each {
				if err := s.PutRemoteSegment(ctx, id, 0, fmt.Sprintf("w%d-%d", w, i), []byte("v"), 1); err != nil {
					t.Errorf("PutRemoteSegment: %v", err)
				}
				if _, _, err := s.ListRemoteSegments(ctx, id, 0); err != nil {
					t.Errorf("ListRemoteSegments: %v", err)
				}
				if _, _, err := s.ClaimRemoteSegments(ctx, id, 0, 1); err != nil {
					t.Errorf("ClaimRemoteSegments: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if got := listNames(t, handles[0], id, 0); len(got) != writers*each {
		t.Fatalf("%d records after %d writes: %v", len(got), writers*each, got)
	}
}

func testClaimRemoteSegments(t *testing.T, cl Cluster) {
	s := cl.Open(t)
	ctx := testCtx(t)
	id := metadata.TopicID{8}
	if err := s.PutRemoteSegment(ctx, id, 0, "a", []byte("1"), 1); err != nil {
		t.Fatal(err)
	}
	names, vals, err := s.ClaimRemoteSegments(ctx, id, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != "a" || !bytes.Equal(vals[0], []byte("1")) {
		t.Fatalf("claimed %v %q", names, vals)
	}
	if err := s.PutRemoteSegment(ctx, id, 0, "late", []byte("2"), 1); !errors.Is(err, metadata.ErrRemoteFenced) {
		t.Fatalf("epoch-1 write after the epoch-2 claim: %v", err)
	}
	if _, _, err := s.ClaimRemoteSegments(ctx, id, 0, 1); !errors.Is(err, metadata.ErrRemoteFenced) {
		t.Fatalf("epoch-1 claim after epoch 2: %v", err)
	}
	if _, _, err := s.ClaimRemoteSegments(ctx, id, 0, 2); err != nil {
		t.Fatalf("reclaim at the same epoch: %v", err)
	}
	if names, _, err := s.ClaimRemoteSegments(ctx, id, 3, 0); err != nil || len(names) != 0 {
		t.Fatalf("claim of an empty partition: %v, %v", names, err)
	}
	if _, _, err := s.ClaimRemoteSegments(ctx, id, 0, -1); err == nil {
		t.Fatal("negative epoch accepted")
	}
}

// testDeletedTopicMarkers: deleting a tiered topic (by config, or with
// remote records from earlier) leaves a marker that refuses further
// remote writes for its id until the sweep forgets it; other topics
// leave none.
func testDeletedTopicMarkers(t *testing.T, cl Cluster) {
	s, other := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	tiered := TopicOf("tiered", 2, 1)
	tiered.Configs = map[string]string{"remote.storage.enable": "true"}
	was := TopicOf("was", 1, 1) // tiering turned off, records remain
	was.Configs = map[string]string{"remote.storage.enable": "false"}
	plain := TopicOf("plain", 1, 1)
	ids := map[string]metadata.TopicID{}
	for _, tp := range []metadata.Topic{tiered, was, plain} {
		if _, err := s.CreateTopic(ctx, tp); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Cache().Topic(tp.Name)
		ids[tp.Name] = got.ID
	}
	for _, name := range []string{"tiered", "was"} {
		if err := s.PutRemoteSegment(ctx, ids[name], 0, "a", []byte("1"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.PutRemoteSegment(ctx, ids["tiered"], 1, "b", []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	if gone, names, err := other.ListDeletedTopics(ctx); err != nil || len(gone) != 0 || len(names) != 0 {
		t.Fatalf("markers before any delete: %v %v %v", gone, names, err)
	}
	for _, name := range []string{"tiered", "was", "plain"} {
		if _, err := s.DeleteTopic(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	gone, names, err := other.ListDeletedTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []metadata.TopicID{ids["tiered"], ids["was"]}
	slices.SortFunc(want, func(x, y metadata.TopicID) int { return bytes.Compare(x[:], y[:]) })
	if !slices.Equal(gone, want) || len(names) != 2 {
		t.Fatalf("markers %v %v, want ids %v in id order", gone, names, want)
	}
	for i, id := range gone {
		if id == ids["tiered"] && names[i] != "tiered" || id == ids["was"] && names[i] != "was" {
			t.Fatalf("marker %v names %q", id, names[i])
		}
	}
	// A copy in flight on a slow leader cannot record behind the sweep.
	if err := other.PutRemoteSegment(ctx, ids["tiered"], 0, "late", []byte("x"), 5); !errors.Is(err, metadata.ErrRemoteTopicDeleted) {
		t.Fatalf("write after deletion: %v, want ErrRemoteTopicDeleted", err)
	}
	if _, _, err := other.ClaimRemoteSegments(ctx, ids["tiered"], 0, 5); !errors.Is(err, metadata.ErrRemoteTopicDeleted) {
		t.Fatalf("claim after deletion: %v, want ErrRemoteTopicDeleted", err)
	}
	// The sweep: records of every partition, then the marker.
	for range 2 {
		if err := other.DeleteRemoteTopic(ctx, ids["tiered"]); err != nil {
			t.Fatalf("DeleteRemoteTopic: %v", err)
		}
	}
	for p := range int32(2) {
		if got := listNames(t, s, ids["tiered"], p); len(got) != 0 {
			t.Fatalf("partition %d records after DeleteRemoteTopic: %v", p, got)
		}
	}
	if got := listNames(t, s, ids["was"], 0); !slices.Equal(got, []string{"a=1"}) {
		t.Fatalf("another id's records: %v", got)
	}
	for range 2 {
		if err := other.ForgetDeletedTopic(ctx, ids["tiered"]); err != nil {
			t.Fatalf("ForgetDeletedTopic: %v", err)
		}
	}
	if gone, _, err := s.ListDeletedTopics(ctx); err != nil || !slices.Equal(gone, []metadata.TopicID{ids["was"]}) {
		t.Fatalf("markers after forgetting one: %v %v", gone, err)
	}
	// A re-created topic of the same name has a new id, free to write.
	if _, err := s.CreateTopic(ctx, tiered); err != nil {
		t.Fatal(err)
	}
	again, _ := s.Cache().Topic("tiered")
	if again.ID == ids["tiered"] {
		t.Fatal("re-created topic kept its id")
	}
	if err := s.PutRemoteSegment(ctx, again.ID, 0, "x", []byte("{}"), 0); err != nil {
		t.Fatal(err)
	}
}

func testRestoreTopic(t *testing.T, cl Cluster) {
	s, other := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	if _, err := s.CreateTopic(ctx, TopicOf("existing", 1, 1)); err != nil {
		t.Fatal(err)
	}
	existing, _ := s.Cache().Topic("existing")
	tp := TopicOf("restored", 2, 1)
	tp.ID = metadata.NewTopicID()
	tp.Configs = map[string]string{"remote.storage.enable": "true"}
	p0 := tp.Partitions[0]
	p0.LeaderEpoch = 3
	tp.Partitions[0] = p0
	// A stale record and fence from an earlier life of the id go.
	if err := s.PutRemoteSegment(ctx, tp.ID, 0, "stale", []byte("x"), 9); err != nil {
		t.Fatal(err)
	}
	records := map[int32]map[string][]byte{0: {"b": []byte("2"), "a": []byte("1")}}
	rev, err := s.RestoreTopic(ctx, tp, records)
	if err != nil {
		t.Fatalf("RestoreTopic: %v", err)
	}
	if err := other.Cache().WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	got, ok := other.Cache().Topic("restored")
	if !ok || got.ID != tp.ID || len(got.Partitions) != 2 || got.Partitions[0].LeaderEpoch != 3 || got.Configs["remote.storage.enable"] != "true" {
		t.Fatalf("restored topic = %+v, %v", got, ok)
	}
	if got := listNames(t, other, tp.ID, 0); !slices.Equal(got, []string{"a=1", "b=2"}) {
		t.Fatalf("restored records %v", got)
	}
	// The fence is the partition's leader epoch.
	if err := other.PutRemoteSegment(ctx, tp.ID, 0, "c", []byte("3"), 2); !errors.Is(err, metadata.ErrRemoteFenced) {
		t.Fatalf("write below the restored epoch: %v, want ErrRemoteFenced", err)
	}
	if err := other.PutRemoteSegment(ctx, tp.ID, 0, "c", []byte("3"), 3); err != nil {
		t.Fatalf("write at the restored epoch: %v", err)
	}

	if _, err := s.RestoreTopic(ctx, tp, nil); !errors.Is(err, metadata.ErrTopicExists) {
		t.Fatalf("restore over an existing name: %v, want ErrTopicExists", err)
	}
	dup := TopicOf("other", 1, 1)
	dup.ID = existing.ID
	if _, err := s.RestoreTopic(ctx, dup, nil); !errors.Is(err, metadata.ErrTopicIDInUse) {
		t.Fatalf("restore with a used id: %v, want ErrTopicIDInUse", err)
	}
	if _, ok := s.Cache().Topic("other"); ok {
		t.Fatal("a refused restore created the topic")
	}
	if _, err := s.RestoreTopic(ctx, TopicOf("zero", 1, 1), nil); err == nil {
		t.Fatal("restore without an id accepted")
	}
	bad := TopicOf("bad", 1, 1)
	bad.ID = metadata.NewTopicID()
	if _, err := s.RestoreTopic(ctx, bad, map[int32]map[string][]byte{4: {"a": nil}}); err == nil {
		t.Fatal("records for a partition the topic lacks accepted")
	}
}
