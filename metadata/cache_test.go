package metadata

import (
	"context"
	"errors"
	"testing"
	"time"
)

func putTopic(name string, id TopicID) Change {
	return Change{Kind: ChangeTopic, Topic: name, ID: id, Configs: map[string]string{"k": name}}
}

func putPart(name string, p int32, leader int32) Change {
	return Change{Kind: ChangePartition, Topic: name, Partition: p, State: PartitionState{Replicas: []int32{leader}, Leader: leader, ISR: []int32{leader}}}
}

func TestCacheApply(t *testing.T) {
	c := NewCache()
	idA, idB := NewTopicID(), NewTopicID()
	c.Load(10, []Change{putTopic("b", idB), putPart("b", 0, 1), putTopic("a", idA), putPart("a", 0, 1), putPart("a", 1, 2),
		{Kind: ChangeBroker, Broker: Broker{ID: 2, Host: "h2", Port: 1}}, {Kind: ChangeBroker, Broker: Broker{ID: 1, Host: "h1", Port: 1}}})
	if c.Revision() != 10 {
		t.Fatalf("revision %d", c.Revision())
	}
	ts := c.Topics()
	if len(ts) != 2 || ts[0].Name != "a" || ts[1].Name != "b" || len(ts[0].Partitions) != 2 {
		t.Fatalf("Topics = %+v", ts)
	}
	if bs := c.Brokers(); len(bs) != 2 || bs[0].ID != 1 || bs[1].ID != 2 {
		t.Fatalf("Brokers = %+v", bs)
	}
	snap, _ := c.Topic("a")

	// One revision: leader change on a/1, delete b entirely.
	c.Apply(11, []Change{putPart("a", 1, 3),
		{Kind: ChangeTopic, Delete: true, Topic: "b"}, {Kind: ChangePartition, Delete: true, Topic: "b", Partition: 0},
		{Kind: ChangeBroker, Delete: true, Broker: Broker{ID: 2}}})
	if ps, _ := c.Partition("a", 1); ps.Leader != 3 {
		t.Fatalf("a/1 leader %d, want 3", ps.Leader)
	}
	if snap.Partitions[1].Leader != 2 {
		t.Fatal("an old snapshot changed under its reader")
	}
	if _, ok := c.Topic("b"); ok {
		t.Fatal("b still present")
	}
	if _, ok := c.TopicByID(idB); ok {
		t.Fatal("b's id still resolves")
	}
	if got, ok := c.TopicByID(idA); !ok || got.Name != "a" {
		t.Fatalf("TopicByID(a) = %+v, %v", got, ok)
	}
	if _, ok := c.Broker(2); ok || len(c.Brokers()) != 1 {
		t.Fatal("broker 2 still present")
	}
	if _, ok := c.Partition("a", 9); ok {
		t.Fatal("unknown partition found")
	}
	if _, ok := c.Partition("zz", 0); ok {
		t.Fatal("partition of unknown topic found")
	}

	// Stale batches are ignored.
	c.Apply(11, []Change{{Kind: ChangeTopic, Delete: true, Topic: "a"}})
	if _, ok := c.Topic("a"); !ok {
		t.Fatal("a duplicate revision was applied")
	}

	// Partitions that arrive before their topic key stay hidden until it does.
	c.Apply(12, []Change{putPart("late", 0, 1)})
	if _, ok := c.Topic("late"); ok {
		t.Fatal("topic without a topic key is visible")
	}
	c.Apply(13, []Change{putTopic("late", NewTopicID())})
	if got, ok := c.Topic("late"); !ok || len(got.Partitions) != 1 {
		t.Fatalf("late = %+v, %v", got, ok)
	}
	// A re-created topic (new id in place) drops the old id mapping.
	newID := NewTopicID()
	c.Apply(14, []Change{putTopic("a", newID)})
	if _, ok := c.TopicByID(idA); ok {
		t.Fatal("replaced id still resolves")
	}
	if got, _ := c.TopicByID(newID); got.Name != "a" || len(got.Partitions) != 2 {
		t.Fatalf("new id -> %+v", got)
	}

	// Load replaces everything.
	c.Load(20, nil)
	if len(c.Topics()) != 0 || len(c.Brokers()) != 0 || c.Revision() != 20 {
		t.Fatal("Load did not replace the content")
	}
}

func TestCacheTopicsSliceIsPrivate(t *testing.T) {
	c := NewCache()
	c.Apply(1, []Change{putTopic("a", NewTopicID()), putTopic("b", NewTopicID())})
	ts := c.Topics()
	ts[0] = Topic{Name: "zzz"}
	if c.Topics()[0].Name != "a" {
		t.Fatal("Topics returned the cache's own slice")
	}
}

func TestCacheWaitAndNotify(t *testing.T) {
	c := NewCache()
	ch := c.Changed()
	done := make(chan error, 1)
	go func() { done <- c.WaitRevision(context.Background(), 5) }()
	c.Apply(3, nil)
	select {
	case <-ch:
	default:
		t.Fatal("Changed not closed by Apply")
	}
	c.Apply(5, []Change{putTopic("a", NewTopicID())})
	if err := <-done; err != nil {
		t.Fatalf("WaitRevision: %v", err)
	}
	if err := c.WaitRevision(context.Background(), 4); err != nil {
		t.Fatalf("WaitRevision for a past revision: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := c.WaitRevision(ctx, 6); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitRevision timeout: %v", err)
	}

	go func() { done <- c.WaitRevision(context.Background(), 100) }()
	c.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitRevision after Close: %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed")
	}
	c.Apply(7, []Change{putTopic("b", NewTopicID())})
	if _, ok := c.Topic("b"); ok || c.Revision() != 5 {
		t.Fatal("a closed cache accepted an update")
	}
	c.Close() // idempotent
}
