package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/metadata"
)

// writeErr wraps the error of a failed etcd write, translating etcd's
// refusals into the metadata sentinels the broker answers clients with:
// its NOSPACE alarm (quota or disk full) is metadata.ErrNoSpace, a txn of
// more ops or bytes than the server takes is metadata.ErrTooLarge, with
// the etcd flag to raise.
func writeErr(op string, err error) error {
	switch {
	case errors.Is(err, rpctypes.ErrNoSpace):
		return fmt.Errorf("etcdstore: %s: %w (%v)", op, metadata.ErrNoSpace, err)
	case errors.Is(err, rpctypes.ErrTooManyOps):
		return fmt.Errorf("etcdstore: %s: %w: %v (raise etcd --max-txn-ops above %d)", op, metadata.ErrTooLarge, err, metadata.MaxPartitionsPerWrite)
	case errors.Is(err, rpctypes.ErrRequestTooLarge):
		return fmt.Errorf("etcdstore: %s: %w: %v (raise etcd --max-request-bytes)", op, metadata.ErrTooLarge, err)
	}
	return fmt.Errorf("etcdstore: %s: %w", op, err)
}

// checkSize refuses, before sending, a txn larger than the requests this
// client sends (maxRequestBytes, which the embedded etcd also takes): an
// error naming the limit rather than a gRPC one.
func checkSize(op string, ops []clientv3.Op) error {
	n := 0
	for _, o := range ops {
		n += len(o.KeyBytes()) + len(o.ValueBytes()) + opOverhead
	}
	if n > maxRequestBytes {
		return fmt.Errorf("etcdstore: %s: %w: %d bytes in one write, at most %d", op, metadata.ErrTooLarge, n, maxRequestBytes)
	}
	return nil
}

// putPartitions appends one put per partition, in index order.
func (s *Store) putPartitions(ops []clientv3.Op, topic string, parts map[int32]metadata.PartitionState) []clientv3.Op {
	for _, p := range slices.Sorted(maps.Keys(parts)) {
		ops = append(ops, clientv3.OpPut(s.keys.partition(topic, p), encodePartition(parts[p])))
	}
	return ops
}

// CreateTopic writes the topic key and all partition keys in one txn that
// requires the topic key to be absent. A zero t.ID gets a fresh random id.
func (s *Store) CreateTopic(ctx context.Context, t metadata.Topic) (int64, error) {
	op := fmt.Sprintf("create topic %q", t.Name)
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	if err := t.Validate(); err != nil {
		return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	if t.ID.IsZero() {
		t.ID = metadata.NewTopicID()
	}
	key := s.keys.topic(t.Name)
	ops := make([]clientv3.Op, 0, 1+len(t.Partitions))
	ops = append(ops, clientv3.OpPut(key, encodeTopic(t.ID, t.Configs)))
	ops = s.putPartitions(ops, t.Name, t.Partitions)
	if err := checkSize(op, ops); err != nil {
		return 0, err
	}
	resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(ops...).Commit()
	if err != nil {
		return 0, writeErr(op, err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("etcdstore: %s: %w", op, metadata.ErrTopicExists)
	}
	return s.visible(ctx, op, resp.Header.Revision)
}

// DeleteTopic removes the topic key and every partition key in one txn
// guarded by the topic's incarnation; for a tiered topic the same txn
// records a deleted-topic marker (deleted.go) so its remote data is
// removed later.
func (s *Store) DeleteTopic(ctx context.Context, name string) (int64, error) {
	op := fmt.Sprintf("delete topic %q", name)
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	if err := metadata.ValidateTopicName(name); err != nil {
		return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	key := s.keys.topic(name)
	for range maxCASAttempts {
		rec, createRev, err := s.getTopic(ctx, op, name)
		if err != nil {
			return 0, err
		}
		marker, err := s.deletedMarkerOps(ctx, name, rec)
		if err != nil {
			return 0, err
		}
		ops := append([]clientv3.Op{clientv3.OpDelete(key), clientv3.OpDelete(s.keys.partitions(name), clientv3.WithPrefix())}, marker...)
		resp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", createRev)).
			Then(ops...).
			Commit()
		if err != nil {
			return 0, writeErr(op, err)
		}
		if resp.Succeeded {
			return s.visible(ctx, op, resp.Header.Revision)
		}
		// Deleted (and maybe re-created) since the read: look again.
	}
	return 0, fmt.Errorf("etcdstore: %s: gave up after %d contended attempts: %w", op, maxCASAttempts, metadata.ErrUnknownTopic)
}

// getTopic reads the topic key; it returns its record and create revision
// (the incarnation: it changes only when the topic is re-created).
func (s *Store) getTopic(ctx context.Context, op, name string) (topicRecord, int64, error) {
	resp, err := s.cli.Get(ctx, s.keys.topic(name))
	if err != nil {
		return topicRecord{}, 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	if len(resp.Kvs) == 0 {
		return topicRecord{}, 0, fmt.Errorf("etcdstore: %s: %w", op, metadata.ErrUnknownTopic)
	}
	rec, err := decodeTopic(resp.Kvs[0].Value)
	if err != nil {
		return topicRecord{}, 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	return rec, resp.Kvs[0].CreateRevision, nil
}

// AddPartitions adds parts, whose indexes must run n..n+k-1 (n ≥ 1). The
// txn requires the same topic incarnation, partition n-1 to exist and
// partition n to be absent; since partitions are only ever created
// contiguously by these txns, that proves the count is still n.
func (s *Store) AddPartitions(ctx context.Context, topic string, parts map[int32]metadata.PartitionState) (int64, error) {
	op := fmt.Sprintf("add partitions to %q", topic)
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	if err := metadata.ValidateTopicName(topic); err != nil {
		return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	if len(parts) == 0 {
		return 0, fmt.Errorf("etcdstore: %s: none given: %w", op, metadata.ErrInvalidPartitions)
	}
	from := int32(-1)
	for p := range parts {
		if from < 0 || p < from {
			from = p
		}
	}
	if from < 1 {
		return 0, fmt.Errorf("etcdstore: %s: first new index %d: %w", op, from, metadata.ErrInvalidPartitions)
	}
	if err := metadata.ValidateNewPartitions(topic, from, parts); err != nil {
		return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	_, createRev, err := s.getTopic(ctx, op, topic)
	if err != nil {
		return 0, err
	}
	key := s.keys.topic(topic)
	puts := s.putPartitions(nil, topic, parts)
	if err := checkSize(op, puts); err != nil {
		return 0, err
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", createRev),
			clientv3.Compare(clientv3.CreateRevision(s.keys.partition(topic, from-1)), ">", 0),
			clientv3.Compare(clientv3.CreateRevision(s.keys.partition(topic, from)), "=", 0)).
		Then(puts...).
		Else(clientv3.OpGet(key), clientv3.OpGet(s.keys.partitions(topic), clientv3.WithPrefix(), clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return 0, writeErr(op, err)
	}
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 || kvs[0].CreateRevision != createRev {
			return 0, fmt.Errorf("etcdstore: %s: %w", op, metadata.ErrUnknownTopic)
		}
		n := resp.Responses[1].GetResponseRange().GetCount()
		return 0, fmt.Errorf("etcdstore: %s: topic has %d partitions, new ones start at %d: %w", op, n, from, metadata.ErrInvalidPartitions)
	}
	return s.visible(ctx, op, resp.Header.Revision)
}

// SetTopicConfigs replaces the override map. The txn is guarded by the
// topic key's create revision, so a topic deleted (and maybe re-created)
// since the read fails with ErrUnknownTopic. Concurrent config writers:
// the last one wins.
func (s *Store) SetTopicConfigs(ctx context.Context, topic string, configs map[string]string) (int64, error) {
	op := fmt.Sprintf("set configs of %q", topic)
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	if err := metadata.ValidateTopicName(topic); err != nil {
		return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	rec, createRev, err := s.getTopic(ctx, op, topic)
	if err != nil {
		return 0, err
	}
	key := s.keys.topic(topic)
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", createRev)).
		Then(clientv3.OpPut(key, encodeTopic(rec.ID, configs))).
		Commit()
	if err != nil {
		return 0, writeErr(op, err)
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("etcdstore: %s: %w", op, metadata.ErrUnknownTopic)
	}
	return s.visible(ctx, op, resp.Header.Revision)
}

// CompareAndSetPartition replaces a partition's state if its stored
// PartitionEpoch is still prevPartitionEpoch. etcd cannot compare inside
// a JSON value, so this reads the key, checks the epoch, and writes with a
// txn guarded by the key's mod revision; a lost race re-checks the state
// the txn's else branch returned.
func (s *Store) CompareAndSetPartition(ctx context.Context, topic string, partition, prevPartitionEpoch int32, next metadata.PartitionState) (int64, error) {
	return s.casPartition(ctx, nil, topic, partition, prevPartitionEpoch, next)
}

// casPartition is CompareAndSetPartition, with the txn also guarded by
// fence when it is not nil (a controller term's write, election.go).
func (s *Store) casPartition(ctx context.Context, fence *fence, topic string, partition, prevPartitionEpoch int32, next metadata.PartitionState) (int64, error) {
	op := fmt.Sprintf("set partition %s-%d", topic, partition)
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	if err := metadata.ValidateTopicName(topic); err != nil {
		return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	key := s.keys.partition(topic, partition)
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	kvs := resp.Kvs
	for range maxCASAttempts {
		if len(kvs) == 0 {
			return 0, fmt.Errorf("etcdstore: %s: %w", op, metadata.ErrUnknownTopic)
		}
		cur, err := decodePartition(kvs[0].Value)
		if err != nil {
			return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
		}
		if cur.PartitionEpoch != prevPartitionEpoch {
			return 0, fmt.Errorf("etcdstore: %s: stored epoch %d, caller expected %d: %w",
				op, cur.PartitionEpoch, prevPartitionEpoch, metadata.ErrStaleEpoch)
		}
		if err := metadata.ValidateTransition(cur, next); err != nil {
			return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
		}
		cmps := append(fence.cmps(s.keys), clientv3.Compare(clientv3.ModRevision(key), "=", kvs[0].ModRevision))
		tresp, err := s.cli.Txn(ctx).
			If(cmps...).
			Then(clientv3.OpPut(key, encodePartition(next))).
			Else(append(fence.gets(s.keys), clientv3.OpGet(key))...).
			Commit()
		if err != nil {
			return 0, writeErr(op, err)
		}
		if tresp.Succeeded {
			return s.visible(ctx, op, tresp.Header.Revision)
		}
		if err := fence.check(s.keys, tresp.Responses); err != nil {
			return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
		}
		kvs = tresp.Responses[len(tresp.Responses)-1].GetResponseRange().GetKvs()
	}
	return 0, fmt.Errorf("etcdstore: %s: gave up after %d contended attempts: %w", op, maxCASAttempts, metadata.ErrStaleEpoch)
}
