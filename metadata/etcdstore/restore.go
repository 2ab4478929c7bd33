package etcdstore

import (
	"context"
	"fmt"
	"maps"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/metadata"
)

// RestoreTopic recreates a topic whose metadata was lost, from what the
// tier kept in the bucket (disaster recovery): first the remote-segment
// records of each partition (records[p]: name → value, written fenced at
// the partition's leader epoch in t.Partitions after any stale records of
// the partition are cleared), then the topic and its partitions with
// t.ID — not a fresh id, since the objects are keyed by it — in
// CreateTopic's txn. It fails with metadata.ErrTopicExists when the name
// is taken and metadata.ErrTopicIDInUse when another topic has the id;
// the records are written only after both checks, and no broker serves
// the id until the topic exists, so nothing else writes them meanwhile.
func (s *Store) RestoreTopic(ctx context.Context, t metadata.Topic, records map[int32]map[string][]byte) (int64, error) {
	op := fmt.Sprintf("restore topic %q", t.Name)
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	if err := t.Validate(); err != nil {
		return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	if t.ID.IsZero() {
		return 0, fmt.Errorf("etcdstore: %s: zero topic id", op)
	}
	resp, err := s.cli.Get(ctx, s.keys.topic(""), clientv3.WithPrefix())
	if err != nil {
		return 0, fmt.Errorf("etcdstore: %s: list topics: %w", op, err)
	}
	for _, kv := range resp.Kvs {
		if string(kv.Key) == s.keys.topic(t.Name) {
			return 0, fmt.Errorf("etcdstore: %s: %w", op, metadata.ErrTopicExists)
		}
		if rec, err := decodeTopic(kv.Value); err == nil && rec.ID == t.ID {
			return 0, fmt.Errorf("etcdstore: %s: %w by %s", op, metadata.ErrTopicIDInUse, kv.Key)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(records)) {
		st, ok := t.Partitions[p]
		if !ok {
			return 0, fmt.Errorf("etcdstore: %s: records for partition %d the topic lacks", op, p)
		}
		if _, err := s.cli.Delete(ctx, s.keys.remotePartition(t.ID, p), clientv3.WithPrefix()); err != nil {
			return 0, fmt.Errorf("etcdstore: %s: clear remote records of partition %d: %w", op, p, err)
		}
		recs := records[p]
		for _, name := range slices.Sorted(maps.Keys(recs)) {
			if err := s.PutRemoteSegment(ctx, t.ID, p, name, recs[name], st.LeaderEpoch); err != nil {
				return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
			}
		}
	}
	return s.CreateTopic(ctx, t)
}
