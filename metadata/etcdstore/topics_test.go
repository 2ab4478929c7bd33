package etcdstore

import (
	"errors"
	"maps"
	"sync"
	"testing"

	"github.com/strata-broker/strata/metadata"
)

func TestTopicLifecycle(t *testing.T) {
	s := openStore(t)
	ctx := testCtx(t)
	c := s.Cache()

	tp := topicOf("orders", 3, 1, 2)
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
	if byID, ok := c.TopicByID(got.ID); !ok || byID.Name != "orders" {
		t.Fatalf("TopicByID = %+v, %v", byID, ok)
	}
	if ps, ok := c.Partition("orders", 2); !ok || ps.Leader != 1 || len(ps.ISR) != 2 {
		t.Fatalf("Partition = %+v, %v", ps, ok)
	}

	if _, err := s.CreateTopic(ctx, topicOf("orders", 1, 1)); !errors.Is(err, metadata.ErrTopicExists) {
		t.Fatalf("second CreateTopic: %v, want ErrTopicExists", err)
	}

	// Configs: replace, then clear.
	if _, err := s.SetTopicConfigs(ctx, "orders", map[string]string{"retention.ms": "1000"}); err != nil {
		t.Fatalf("SetTopicConfigs: %v", err)
	}
	got, _ = c.Topic("orders")
	if want := map[string]string{"retention.ms": "1000"}; !maps.Equal(got.Configs, want) {
		t.Fatalf("configs = %v, want %v", got.Configs, want)
	}
	if _, err := s.SetTopicConfigs(ctx, "orders", nil); err != nil {
		t.Fatalf("SetTopicConfigs(nil): %v", err)
	}
	if got, _ = c.Topic("orders"); len(got.Configs) != 0 {
		t.Fatalf("configs after clear = %v", got.Configs)
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
	if _, err := s.DeleteTopic(ctx, "orders"); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Fatalf("second DeleteTopic: %v, want ErrUnknownTopic", err)
	}
	if _, err := s.CreateTopic(ctx, topicOf("orders", 1, 1)); err != nil {
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

func TestCreateTopicRejectsBadInput(t *testing.T) {
	s := openStore(t)
	ctx := testCtx(t)
	gap := topicOf("gappy", 2, 1)
	gap.Partitions[5] = part(1)
	for _, tc := range []struct {
		name string
		tp   metadata.Topic
		want error
	}{
		{"bad name", topicOf("a/b", 1, 1), metadata.ErrInvalidTopic},
		{"no partitions", metadata.Topic{Name: "empty"}, metadata.ErrInvalidPartitions},
		{"gap", gap, metadata.ErrInvalidPartitions},
		{"no replicas", metadata.Topic{Name: "norep", Partitions: map[int32]metadata.PartitionState{0: {Leader: -1}}}, metadata.ErrInvalidPartitions},
	} {
		if _, err := s.CreateTopic(ctx, tc.tp); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if n := len(s.Cache().Topics()); n != 0 {
		t.Fatalf("%d topics after rejected creates", n)
	}
}

func TestCreateTopicKeepsGivenID(t *testing.T) {
	s := openStore(t)
	tp := topicOf("given", 1, 1)
	tp.ID = metadata.NewTopicID()
	if _, err := s.CreateTopic(testCtx(t), tp); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if got, _ := s.Cache().Topic("given"); got.ID != tp.ID {
		t.Fatalf("id = %v, want %v", got.ID, tp.ID)
	}
}

func TestAddPartitions(t *testing.T) {
	s := openStore(t)
	ctx := testCtx(t)
	if _, err := s.CreateTopic(ctx, topicOf("grow", 1, 1)); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	add := map[int32]metadata.PartitionState{1: part(1), 2: part(1)}
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
	// A gap after the current end.
	if _, err := s.AddPartitions(ctx, "grow", map[int32]metadata.PartitionState{5: part(1)}); !errors.Is(err, metadata.ErrInvalidPartitions) {
		t.Fatalf("gap AddPartitions: %v, want ErrInvalidPartitions", err)
	}
	if _, err := s.AddPartitions(ctx, "grow", map[int32]metadata.PartitionState{3: part(1), 5: part(1)}); !errors.Is(err, metadata.ErrInvalidPartitions) {
		t.Fatalf("non-contiguous AddPartitions: %v, want ErrInvalidPartitions", err)
	}
	if _, err := s.AddPartitions(ctx, "missing", map[int32]metadata.PartitionState{1: part(1)}); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Fatalf("AddPartitions(unknown): %v, want ErrUnknownTopic", err)
	}
	if got, _ := s.Cache().Topic("grow"); len(got.Partitions) != 3 {
		t.Fatalf("partitions after failed adds = %d, want 3", len(got.Partitions))
	}
}

func TestCompareAndSetPartition(t *testing.T) {
	s := openStore(t)
	ctx := testCtx(t)
	if _, err := s.CreateTopic(ctx, topicOf("cas", 1, 1, 2, 3)); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	next := metadata.PartitionState{Replicas: []int32{1, 2, 3}, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1, ISR: []int32{2, 3}}
	if _, err := s.CompareAndSetPartition(ctx, "cas", 0, 0, next); err != nil {
		t.Fatalf("CAS: %v", err)
	}
	if ps, _ := s.Cache().Partition("cas", 0); ps.Leader != 2 || ps.PartitionEpoch != 1 {
		t.Fatalf("cached state = %+v", ps)
	}
	stale := next
	stale.PartitionEpoch = 2
	if _, err := s.CompareAndSetPartition(ctx, "cas", 0, 0, stale); !errors.Is(err, metadata.ErrStaleEpoch) {
		t.Fatalf("stale CAS: %v, want ErrStaleEpoch", err)
	}
	back := next
	back.PartitionEpoch, back.LeaderEpoch = 2, 0 // leader epoch going back
	if _, err := s.CompareAndSetPartition(ctx, "cas", 0, 1, back); !errors.Is(err, metadata.ErrInvalidPartitions) {
		t.Fatalf("invalid CAS: %v, want ErrInvalidPartitions", err)
	}
	if _, err := s.CompareAndSetPartition(ctx, "cas", 7, 0, next); !errors.Is(err, metadata.ErrUnknownTopic) {
		t.Fatalf("CAS on missing partition: %v, want ErrUnknownTopic", err)
	}

	// Racing controllers: exactly one wins each epoch.
	const racers = 4
	var wg sync.WaitGroup
	wins := make(chan int32, racers)
	for i := range int32(racers) {
		wg.Go(func() {
			st := metadata.PartitionState{Replicas: []int32{1, 2, 3}, Leader: 1 + i%3, LeaderEpoch: 2, PartitionEpoch: 2, ISR: []int32{1, 2, 3}}
			_, err := s.CompareAndSetPartition(ctx, "cas", 0, 1, st)
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
