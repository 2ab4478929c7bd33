package memstore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
)

// CreateTopic stores the topic and all its partitions in one revision. A
// zero t.ID gets a fresh random id.
func (s *Store) CreateTopic(_ context.Context, t metadata.Topic) (int64, error) {
	op := fmt.Sprintf("create topic %q", t.Name)
	if err := t.Validate(); err != nil {
		return 0, fmt.Errorf("memstore: %s: %w", op, err)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	return b.createTopic(op, t)
}

// createTopic stores a copy of the validated t. b.mu must be held.
func (b *Backend) createTopic(op string, t metadata.Topic) (int64, error) {
	if _, ok := b.topics[t.Name]; ok {
		return 0, fmt.Errorf("memstore: %s: %w", op, metadata.ErrTopicExists)
	}
	t = t.Clone()
	if t.ID.IsZero() {
		t.ID = metadata.NewTopicID()
	}
	tp := &topic{id: t.ID, configs: nonEmpty(t.Configs), parts: t.Partitions}
	b.topics[t.Name] = tp
	return b.commit(topicChanges(t.Name, tp)...), nil
}

// nonEmpty is m, or nil when m is empty (as etcdstore's JSON drops it).
func nonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// DeleteTopic removes the topic and its partitions in one revision; for a
// tiered topic the same revision records its deleted-topic marker.
func (s *Store) DeleteTopic(_ context.Context, name string) (int64, error) {
	return s.updateTopic(fmt.Sprintf("delete topic %q", name), name, nil, func(b *Backend, tp *topic) (int64, error) {
		if b.tiered(tp) {
			b.deleted[tp.id] = name
		}
		delete(b.topics, name)
		changes := []metadata.Change{{Kind: metadata.ChangeTopic, Delete: true, Topic: name}}
		for _, p := range slices.Sorted(maps.Keys(tp.parts)) {
			changes = append(changes, metadata.Change{Kind: metadata.ChangePartition, Delete: true, Topic: name, Partition: p})
		}
		return b.commit(changes...), nil
	})
}

// updateTopic is the frame of a write to one existing topic: it checks
// the name, takes b.mu, checks fence (when not nil: a controller term's
// write, election.go) and the handle, and runs update on the stored
// topic. Errors of fence and update are wrapped with op.
func (s *Store) updateTopic(op, name string, fence func() error, update func(b *Backend, tp *topic) (int64, error)) (int64, error) {
	if err := metadata.ValidateTopicName(name); err != nil {
		return 0, fmt.Errorf("memstore: %s: %w", op, err)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if fence != nil {
		if err := fence(); err != nil {
			return 0, fmt.Errorf("memstore: %s: %w", op, err)
		}
	}
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	tp, ok := b.topics[name]
	if !ok {
		return 0, fmt.Errorf("memstore: %s: %w", op, metadata.ErrUnknownTopic)
	}
	rev, err := update(b, tp)
	if err != nil {
		return 0, fmt.Errorf("memstore: %s: %w", op, err)
	}
	return rev, nil
}

// tiered reports whether a deleted topic's remote data may exist: remote
// storage is enabled in its configs, or remote-segment records exist for
// its id. An unreadable setting counts as off (the records still tell).
// b.mu must be held.
func (b *Backend) tiered(tp *topic) bool {
	if on, _, err := config.TopicOverrideBool(tp.configs, "remote.storage.enable"); on && err == nil {
		return true
	}
	for k := range b.remote {
		if k.id == tp.id {
			return true
		}
	}
	return false
}

// AddPartitions adds parts, whose indexes must continue the topic's
// current count exactly.
func (s *Store) AddPartitions(_ context.Context, name string, parts map[int32]metadata.PartitionState) (int64, error) {
	op := fmt.Sprintf("add partitions to %q", name)
	// The name before the parts, as etcdstore; updateTopic checks it again.
	if err := metadata.ValidateTopicName(name); err != nil {
		return 0, fmt.Errorf("memstore: %s: %w", op, err)
	}
	if len(parts) == 0 {
		return 0, fmt.Errorf("memstore: %s: none given: %w", op, metadata.ErrInvalidPartitions)
	}
	from := slices.Min(slices.Collect(maps.Keys(parts)))
	if from < 1 {
		return 0, fmt.Errorf("memstore: %s: first new index %d: %w", op, from, metadata.ErrInvalidPartitions)
	}
	if err := metadata.ValidateNewPartitions(name, from, parts); err != nil {
		return 0, fmt.Errorf("memstore: %s: %w", op, err)
	}
	return s.updateTopic(op, name, nil, func(b *Backend, tp *topic) (int64, error) {
		if n := int32(len(tp.parts)); n != from {
			return 0, fmt.Errorf("topic has %d partitions, new ones start at %d: %w", n, from, metadata.ErrInvalidPartitions)
		}
		var changes []metadata.Change
		for _, p := range slices.Sorted(maps.Keys(parts)) {
			st := parts[p].Clone()
			tp.parts[p] = st
			changes = append(changes, metadata.Change{Kind: metadata.ChangePartition, Topic: name, Partition: p, State: st})
		}
		return b.commit(changes...), nil
	})
}

// SetTopicConfigs replaces the topic's override map.
func (s *Store) SetTopicConfigs(_ context.Context, name string, configs map[string]string) (int64, error) {
	return s.updateTopic(fmt.Sprintf("set configs of %q", name), name, nil, func(b *Backend, tp *topic) (int64, error) {
		tp.configs = nonEmpty(maps.Clone(configs))
		return b.commit(metadata.Change{Kind: metadata.ChangeTopic, Topic: name, ID: tp.id, Configs: tp.configs}), nil
	})
}

// CompareAndSetPartition replaces a partition's state if its stored
// PartitionEpoch is still prevPartitionEpoch.
func (s *Store) CompareAndSetPartition(_ context.Context, topic string, partition, prevPartitionEpoch int32, next metadata.PartitionState) (int64, error) {
	return s.casPartition(nil, topic, partition, prevPartitionEpoch, next)
}

// casPartition is CompareAndSetPartition; fence, when not nil, is checked
// first under the lock (see updateTopic).
func (s *Store) casPartition(fence func() error, name string, partition, prevPartitionEpoch int32, next metadata.PartitionState) (int64, error) {
	op := fmt.Sprintf("set partition %s-%d", name, partition)
	return s.updateTopic(op, name, fence, func(b *Backend, tp *topic) (int64, error) {
		cur, ok := tp.parts[partition]
		if !ok {
			return 0, metadata.ErrUnknownTopic
		}
		if cur.PartitionEpoch != prevPartitionEpoch {
			return 0, fmt.Errorf("stored epoch %d, caller expected %d: %w", cur.PartitionEpoch, prevPartitionEpoch, metadata.ErrStaleEpoch)
		}
		if err := metadata.ValidateTransition(cur, next); err != nil {
			return 0, err
		}
		next = next.Clone()
		tp.parts[partition] = next
		return b.commit(metadata.Change{Kind: metadata.ChangePartition, Topic: name, Partition: partition, State: next}), nil
	})
}

// AllocateProducerIDs reserves the block [first, first+n) from one
// counter shared by all handles.
func (s *Store) AllocateProducerIDs(_ context.Context, n int64) (int64, error) {
	const op = "allocate producer ids"
	if n <= 0 {
		return 0, fmt.Errorf("memstore: %s: block size %d must be positive", op, n)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	first := b.nextPID
	if first > math.MaxInt64-n {
		return 0, fmt.Errorf("memstore: %s: id space exhausted at %d", op, first)
	}
	b.nextPID += n
	b.commit()
	return first, nil
}

// PutReassignment records (or replaces) a partition's request.
func (s *Store) PutReassignment(_ context.Context, r metadata.Reassignment) error {
	op := fmt.Sprintf("put reassignment of %s-%d", r.Topic, r.Partition)
	if err := metadata.ValidateTopicName(r.Topic); err != nil {
		return fmt.Errorf("memstore: %s: %w", op, err)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(op); err != nil {
		return err
	}
	r = cloneReassignment(r)
	r.Revision = b.commit()
	b.reassign[partKey{topic: r.Topic, partition: r.Partition}] = r
	return nil
}

// Reassignments lists the pending requests by topic and partition.
func (s *Store) Reassignments(context.Context) ([]metadata.Reassignment, error) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen("list reassignments"); err != nil {
		return nil, err
	}
	out := make([]metadata.Reassignment, 0, len(b.reassign))
	for _, r := range b.reassign {
		out = append(out, cloneReassignment(r))
	}
	slices.SortFunc(out, func(x, y metadata.Reassignment) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	return out, nil
}

// DeleteReassignment removes the request unless it changed since r was
// listed.
func (s *Store) DeleteReassignment(_ context.Context, r metadata.Reassignment) error {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(fmt.Sprintf("delete reassignment of %s-%d", r.Topic, r.Partition)); err != nil {
		return err
	}
	k := partKey{topic: r.Topic, partition: r.Partition}
	if cur, ok := b.reassign[k]; ok && cur.Revision == r.Revision {
		delete(b.reassign, k)
		b.commit()
	}
	return nil
}

func cloneReassignment(r metadata.Reassignment) metadata.Reassignment {
	r.Target, r.Original = slices.Clone(r.Target), slices.Clone(r.Original)
	return r
}
