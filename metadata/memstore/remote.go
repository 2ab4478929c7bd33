package memstore

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/strata-broker/strata/metadata"
)

// remotePartition is the remote-segment state of one partition: the
// highest leader epoch that wrote, and the records by name. It exists
// once any write raised the fence, even with no record left.
type remotePartition struct {
	fence int32
	recs  map[string][]byte
}

// ListRemoteSegments returns copies of the partition's records, in name
// order.
func (s *Store) ListRemoteSegments(_ context.Context, id metadata.TopicID, partition int32) ([]string, [][]byte, error) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen("list remote segments"); err != nil {
		return nil, nil, err
	}
	names, values := b.remote[partKey{id: id, partition: partition}].list()
	return names, values, nil
}

// PutRemoteSegment writes (value nil: deletes) a record, fenced by
// leaderEpoch.
func (s *Store) PutRemoteSegment(_ context.Context, id metadata.TopicID, partition int32, name string, value []byte, leaderEpoch int32) error {
	op := fmt.Sprintf("write remote segment %q epoch %d", name, leaderEpoch)
	if leaderEpoch < 0 || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("memstore: %s: invalid argument", op)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(op); err != nil {
		return err
	}
	rp, err := b.fenced(id, partition, leaderEpoch)
	if err != nil {
		return fmt.Errorf("memstore: %s: %w", op, err)
	}
	if value == nil {
		delete(rp.recs, name)
	} else {
		rp.recs[name] = slices.Clone(value)
	}
	b.commit()
	return nil
}

// ClaimRemoteSegments raises the fence to leaderEpoch and returns copies
// of the records as of then.
func (s *Store) ClaimRemoteSegments(_ context.Context, id metadata.TopicID, partition int32, leaderEpoch int32) ([]string, [][]byte, error) {
	op := fmt.Sprintf("claim remote segments epoch %d", leaderEpoch)
	if leaderEpoch < 0 {
		return nil, nil, fmt.Errorf("memstore: %s: invalid argument", op)
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(op); err != nil {
		return nil, nil, err
	}
	rp, err := b.fenced(id, partition, leaderEpoch)
	if err != nil {
		return nil, nil, fmt.Errorf("memstore: %s: %w", op, err)
	}
	b.commit()
	names, values := rp.list()
	return names, values, nil
}

// fenced raises the partition's fence to epoch, unless a newer epoch holds
// it or the topic id is marked deleted. b.mu must be held.
func (b *Backend) fenced(id metadata.TopicID, partition, epoch int32) (*remotePartition, error) {
	k := partKey{id: id, partition: partition}
	rp := b.remote[k]
	if rp != nil && rp.fence > epoch {
		return nil, fmt.Errorf("%w: epoch %d, fence %d", metadata.ErrRemoteFenced, epoch, rp.fence)
	}
	if _, gone := b.deleted[id]; gone {
		return nil, metadata.ErrRemoteTopicDeleted
	}
	if rp == nil {
		rp = &remotePartition{recs: map[string][]byte{}}
		b.remote[k] = rp
	}
	rp.fence = epoch
	return rp, nil
}

// list copies the records in name order (none for a nil rp).
func (rp *remotePartition) list() (names []string, values [][]byte) {
	if rp == nil {
		return nil, nil
	}
	for _, n := range slices.Sorted(maps.Keys(rp.recs)) {
		names = append(names, n)
		values = append(values, slices.Clone(rp.recs[n]))
	}
	return names, values
}

// ListDeletedTopics returns the deleted-topic markers in id order.
func (s *Store) ListDeletedTopics(context.Context) ([]metadata.TopicID, []string, error) {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen("list deleted topics"); err != nil {
		return nil, nil, err
	}
	ids := slices.SortedFunc(maps.Keys(b.deleted), func(x, y metadata.TopicID) int { return bytes.Compare(x[:], y[:]) })
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = b.deleted[id]
	}
	return ids, names, nil
}

// DeleteRemoteTopic removes every remote-segment record and fence of id.
func (s *Store) DeleteRemoteTopic(_ context.Context, id metadata.TopicID) error {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(fmt.Sprintf("delete remote segments of topic %x", id[:])); err != nil {
		return err
	}
	n := len(b.remote)
	maps.DeleteFunc(b.remote, func(k partKey, _ *remotePartition) bool { return k.id == id })
	if len(b.remote) != n {
		b.commit()
	}
	return nil
}

// ForgetDeletedTopic removes id's marker.
func (s *Store) ForgetDeletedTopic(_ context.Context, id metadata.TopicID) error {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(fmt.Sprintf("forget deleted topic %x", id[:])); err != nil {
		return err
	}
	if _, ok := b.deleted[id]; ok {
		delete(b.deleted, id)
		b.commit()
	}
	return nil
}

// RestoreTopic checks the name and the id, writes the records of each
// partition (fence reset, then raised to the partition's leader epoch)
// and creates the topic with t.ID, all under one lock.
func (s *Store) RestoreTopic(_ context.Context, t metadata.Topic, records map[int32]map[string][]byte) (int64, error) {
	op := fmt.Sprintf("restore topic %q", t.Name)
	if err := t.Validate(); err != nil {
		return 0, fmt.Errorf("memstore: %s: %w", op, err)
	}
	if t.ID.IsZero() {
		return 0, fmt.Errorf("memstore: %s: zero topic id", op)
	}
	for p, recs := range records {
		if _, ok := t.Partitions[p]; !ok {
			return 0, fmt.Errorf("memstore: %s: records for partition %d the topic lacks", op, p)
		}
		for name := range recs {
			if name == "" || strings.Contains(name, "/") {
				return 0, fmt.Errorf("memstore: %s: invalid record name %q", op, name)
			}
		}
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	if _, ok := b.topics[t.Name]; ok {
		return 0, fmt.Errorf("memstore: %s: %w", op, metadata.ErrTopicExists)
	}
	for name, tp := range b.topics {
		if tp.id == t.ID {
			return 0, fmt.Errorf("memstore: %s: %w by %q", op, metadata.ErrTopicIDInUse, name)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(records)) {
		delete(b.remote, partKey{id: t.ID, partition: p})
		rp, err := b.fenced(t.ID, p, t.Partitions[p].LeaderEpoch)
		if err != nil {
			return 0, fmt.Errorf("memstore: %s: partition %d: %w", op, p, err)
		}
		for name, v := range records[p] {
			if v != nil { // nil deletes, as in PutRemoteSegment
				rp.recs[name] = slices.Clone(v)
			}
		}
		b.commit()
	}
	return b.createTopic(op, t)
}
