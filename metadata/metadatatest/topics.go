package metadatatest

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
)

func testTopicLifecycle(t *testing.T, cl Cluster) {
	s := cl.Open(t)
	ctx := testCtx(t)
	c := s.Cache()

	tp := TopicOf("orders", 3, 1, 2)
	tp.Configs = map[string]string{"cleanup.policy": "compact"}
	rev, err := s.CreateTopic(ctx, tp)
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	// Visible in this store's cache as soon as CreateTopic returns.
	if c.Revision() < rev {
		t.Fatalf("cache at %d after write at %d", c.Revision(), rev)
	}
	got, ok := c.Topic("orders")
	if !ok || got.ID.IsZero() || len(got.Partitions) != 3 || got.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("cache topic = %+v, %v", got, ok)
	}
	// The store keeps no reference to the caller's maps and slices.
	tp.Configs["cleanup.policy"] = "delete"
	tp.Partitions[0].Replicas[0] = 9
	if got, _ := c.Topic("orders"); got.Configs["cleanup.policy"] != "compact" || got.Partitions[0].Replicas[0] != 1 {
		t.Fatalf("caller's change leaked into the store: %+v", got)
	}
	if byID, ok := c.TopicByID(got.ID); !ok || byID.Name != "orders" {
		t.Fatalf("TopicByID = %+v, %v", byID, ok)
	}
	if ps, ok := c.Partition("orders", 2); !ok || ps.Leader != 1 || len(ps.ISR) != 2 {
		t.Fatalf("Partition = %+v, %v", ps, ok)
	}
	if _, err := s.CreateTopic(ctx, TopicOf("orders", 1, 1)); !errors.Is(err, metadata.ErrTopicExists) {
		t.Fatalf("second CreateTopic: %v, want ErrTopicExists", err)
	}

	// Configs: replace, then clear.
	rev2, err := s.SetTopicConfigs(ctx, "orders", map[string]string{"retention.ms": "1000"})
	if err != nil {
		t.Fatalf("SetTopicConfigs: %v", err)
	}
	if rev2 <= rev {
		t.Fatalf("revision %d after %d", rev2, rev)
	}
	got, _ = c.Topic("orders")
	if want := map[string]string{"retention.ms": "1000"}; !maps.Equal(got.Configs, want) {
		t.Fatalf("configs = %v, want %v", got.Configs, want)
	}
	if _, err := s.SetTopicConfigs(ctx, "orders", nil); err != nil {
		t.Fatalf("SetTopicConfigs(nil): %v", err)
	}
	if got, _ = c.Topic("orders"); len(got.Configs) != 0 || len(got.Partitions) != 3 {
		t.Fatalf("topic after clearing configs = %+v", got)
	}
	if _, err := s.SetTopicConfigs(ctx, "nope", nil); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Fatalf("SetTopicConfigs(unknown): %v", err)
	}

	// Delete, then re-create: a new id, and the old id is gone.
	oldID := got.ID
	if _, err := s.DeleteTopic(ctx, "orders"); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	if _, ok := c.Topic("orders"); ok {
		t.Fatal("topic still cached after delete")
	}
	if _, ok := c.Partition("orders", 0); ok {
		t.Fatal("partition still cached after delete")
	}
	if _, err := s.DeleteTopic(ctx, "orders"); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Fatalf("second DeleteTopic: %v, want ErrUnknownTopic", err)
	}
	if _, err := s.CreateTopic(ctx, TopicOf("orders", 1, 1)); err != nil {
		t.Fatalf("re-create: %v", err)
	}
	got, _ = c.Topic("orders")
	if got.ID == oldID || len(got.Partitions) != 1 {
		t.Fatalf("re-created topic = %+v (old id %v)", got, oldID)
	}
	if _, ok := c.TopicByID(oldID); ok {
		t.Fatal("old id still resolves")
	}
}

func testCreateTopicRejectsBadInput(t *testing.T, cl Cluster) {
	s := cl.Open(t)
	ctx := testCtx(t)
	gap := TopicOf("gappy", 2, 1)
	gap.Partitions[5] = Part(1)
	for _, tc := range []struct {
		name string
		tp   metadata.Topic
		want error
	}{
		{"bad name", TopicOf("a/b", 1, 1), metadata.ErrInvalidTopic},
		{"no partitions", metadata.Topic{Name: "empty"}, metadata.ErrInvalidPartitions},
		{"gap", gap, metadata.ErrInvalidPartitions},
		{"no replicas", metadata.Topic{Name: "norep", Partitions: map[int32]metadata.PartitionState{0: {Leader: -1}}}, metadata.ErrInvalidPartitions},
	} {
		if _, err := s.CreateTopic(ctx, tc.tp); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := s.DeleteTopic(ctx, "a/b"); !errors.Is(err, metadata.ErrInvalidTopic) {
		t.Errorf("DeleteTopic(bad name): %v", err)
	}
	if n := len(s.Cache().Topics()); n != 0 {
		t.Fatalf("%d topics after rejected creates", n)
	}
}

func testCreateTopicKeepsGivenID(t *testing.T, cl Cluster) {
	s := cl.Open(t)
	tp := TopicOf("given", 1, 1)
	tp.ID = metadata.NewTopicID()
	if _, err := s.CreateTopic(testCtx(t), tp); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if got, _ := s.Cache().Topic("given"); got.ID != tp.ID {
		t.Fatalf("id = %v, want %v", got.ID, tp.ID)
	}
}

func testAddPartitions(t *testing.T, cl Cluster) {
	s := cl.Open(t)
	ctx := testCtx(t)
	if _, err := s.CreateTopic(ctx, TopicOf("grow", 1, 1)); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	add := map[int32]metadata.PartitionState{1: Part(1), 2: Part(1)}
	if _, err := s.AddPartitions(ctx, "grow", add); err != nil {
		t.Fatalf("AddPartitions: %v", err)
	}
	if got, _ := s.Cache().Topic("grow"); len(got.Partitions) != 3 {
		t.Fatalf("partitions = %d, want 3", len(got.Partitions))
	}
	// The same request again is based on a stale count.
	if _, err := s.AddPartitions(ctx, "grow", add); !errors.Is(err, metadata.ErrInvalidPartitions) {
		t.Fatalf("stale AddPartitions: %v, want ErrInvalidPartitions", err)
	}
	for name, parts := range map[string]map[int32]metadata.PartitionState{
		"gap":            {5: Part(1)},
		"non-contiguous": {3: Part(1), 5: Part(1)},
		"none":           {},
		"from zero":      {0: Part(1)},
		"no replicas":    {3: {Leader: -1}},
	} {
		if _, err := s.AddPartitions(ctx, "grow", parts); !errors.Is(err, metadata.ErrInvalidPartitions) {
			t.Errorf("%s AddPartitions: %v, want ErrInvalidPartitions", name, err)
		}
	}
	if _, err := s.AddPartitions(ctx, "missing", map[int32]metadata.PartitionState{1: Part(1)}); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Fatalf("AddPartitions(unknown): %v, want ErrUnknownTopic", err)
	}
	if got, _ := s.Cache().Topic("grow"); len(got.Partitions) != 3 {
		t.Fatalf("partitions after failed adds = %d, want 3", len(got.Partitions))
	}
}

func testCompareAndSetPartition(t *testing.T, cl Cluster) {
	s := cl.Open(t)
	ctx := testCtx(t)
	if _, err := s.CreateTopic(ctx, TopicOf("cas", 1, 1, 2, 3)); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	next := metadata.PartitionState{Replicas: []int32{1, 2, 3}, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1, ISR: []int32{2, 3}}
	rev, err := s.CompareAndSetPartition(ctx, "cas", 0, 0, next)
	if err != nil {
		t.Fatalf("CAS: %v", err)
	}
	if ps, _ := s.Cache().Partition("cas", 0); ps.Leader != 2 || ps.PartitionEpoch != 1 || s.Cache().Revision() < rev {
		t.Fatalf("cached state = %+v at revision %d (write at %d)", ps, s.Cache().Revision(), rev)
	}
	next.ISR[0] = 1 // the store kept its own copy
	if ps, _ := s.Cache().Partition("cas", 0); ps.ISR[0] != 2 {
		t.Fatalf("caller's change leaked into the store: %+v", ps)
	}
	next.ISR[0] = 2
	stale := next.Clone()
	stale.PartitionEpoch = 2
	if _, err := s.CompareAndSetPartition(ctx, "cas", 0, 0, stale); !errors.Is(err, metadata.ErrStaleEpoch) {
		t.Fatalf("stale CAS: %v, want ErrStaleEpoch", err)
	}
	back := next.Clone()
	back.PartitionEpoch, back.LeaderEpoch = 2, 0 // leader epoch going back
	if _, err := s.CompareAndSetPartition(ctx, "cas", 0, 1, back); !errors.Is(err, metadata.ErrInvalidPartitions) {
		t.Fatalf("invalid CAS: %v, want ErrInvalidPartitions", err)
	}
	same := next.Clone() // partition epoch not growing
	if _, err := s.CompareAndSetPartition(ctx, "cas", 0, 1, same); !errors.Is(err, metadata.ErrInvalidPartitions) {
		t.Fatalf("CAS keeping the epoch: %v, want ErrInvalidPartitions", err)
	}
	if _, err := s.CompareAndSetPartition(ctx, "cas", 7, 0, next); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Fatalf("CAS on missing partition: %v, want ErrUnknownTopic", err)
	}
	if _, err := s.CompareAndSetPartition(ctx, "nope", 0, 0, next); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Fatalf("CAS on missing topic: %v, want ErrUnknownTopic", err)
	}

	// Racing writers on two handles: exactly one wins each epoch.
	other := cl.Open(t)
	if err := other.Cache().WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	const racers = 4
	var wg sync.WaitGroup
	wins := make(chan int32, racers)
	for i := range int32(racers) {
		w := s
		if i%2 == 1 {
			w = other
		}
		wg.Go(func() {
			st := metadata.PartitionState{Replicas: []int32{1, 2, 3}, Leader: 1 + i%3, LeaderEpoch: 2, PartitionEpoch: 2, ISR: []int32{1, 2, 3}}
			_, err := w.CompareAndSetPartition(ctx, "cas", 0, 1, st)
			switch {
			case err == nil:
				wins <- i
			case !errors.Is(err, metadata.ErrStaleEpoch):
				t.Errorf("racer %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	close(wins)
	if n := len(wins); n != 1 {
		t.Fatalf("%d racers won, want 1", n)
	}
}

// testCacheAcrossHandles: two handles on one backend, as two brokers.
func testCacheAcrossHandles(t *testing.T, cl Cluster) {
	writer, reader := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	if writer.ClusterID() == "" || writer.ClusterID() != reader.ClusterID() {
		t.Fatalf("cluster ids %q vs %q", writer.ClusterID(), reader.ClusterID())
	}
	if _, err := metadata.ParseTopicID(writer.ClusterID()); err != nil {
		t.Fatalf("cluster id %q is not in Kafka's form: %v", writer.ClusterID(), err)
	}
	rev, err := writer.CreateTopic(ctx, TopicOf("shared", 2, 1))
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if err := reader.Cache().WaitRevision(ctx, rev); err != nil {
		t.Fatalf("WaitRevision: %v", err)
	}
	if _, ok := reader.Cache().Topic("shared"); !ok {
		t.Fatal("reader does not see the topic")
	}
	// A handle opened later loads the content before Open returns.
	late := cl.Open(t)
	if got, ok := late.Cache().Topic("shared"); !ok || len(got.Partitions) != 2 || late.Cache().Revision() < rev {
		t.Fatalf("late handle sees %+v, %v at revision %d", got, ok, late.Cache().Revision())
	}
	// Change notification, without waiting on a revision.
	changed := reader.Cache().Changed()
	if _, err := writer.CompareAndSetPartition(ctx, "shared", 1, 0,
		metadata.PartitionState{Replicas: []int32{1}, Leader: metadata.NoLeader, LeaderEpoch: 1, PartitionEpoch: 1}); err != nil {
		t.Fatalf("CAS: %v", err)
	}
	WaitClosed(t, changed, "change notification")
	waitFor(t, reader.Cache(), "leader change", func() bool {
		ps, _ := reader.Cache().Partition("shared", 1)
		return ps.Leader == metadata.NoLeader
	})
	if _, err := writer.DeleteTopic(ctx, "shared"); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	waitFor(t, reader.Cache(), "deletion", func() bool { return len(reader.Cache().Topics()) == 0 })
	if _, ok := reader.Cache().Partition("shared", 0); ok {
		t.Fatal("reader still has a partition of the deleted topic")
	}
}

// testClosedStore: a closed handle refuses work with ErrClosed, and its
// cache with it.
func testClosedStore(t *testing.T, cl Cluster) {
	s, other := cl.Open(t), cl.Open(t)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.CreateTopic(ctx, TopicOf("x", 1, 1)); !errors.Is(err, metadata.ErrClosed) {
		t.Fatalf("CreateTopic after Close: %v, want ErrClosed", err)
	}
	if _, err := s.RegisterBroker(ctx, metadata.Broker{ID: 1, Host: "h", Port: 1}, time.Second); !errors.Is(err, metadata.ErrClosed) {
		t.Fatalf("RegisterBroker after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Campaign(ctx, 1, time.Second); !errors.Is(err, metadata.ErrClosed) {
		t.Fatalf("Campaign after Close: %v, want ErrClosed", err)
	}
	if err := s.Cache().WaitRevision(ctx, 1<<40); !errors.Is(err, metadata.ErrClosed) {
		t.Fatalf("WaitRevision on a closed cache: %v, want ErrClosed", err)
	}
	WaitClosed(t, s.Cache().Done(), "cache Done")
	// The other handle is unaffected.
	if _, err := other.CreateTopic(ctx, TopicOf("x", 1, 1)); err != nil {
		t.Fatalf("CreateTopic on another handle: %v", err)
	}
}
