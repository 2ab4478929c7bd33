package etcdstore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
)

// Deleted-topic markers (tiered storage clean-up) live under
//
//	deleted-topics/<topicID hex>   {"topic":"<name>"}
//
// DeleteTopic writes the marker in the same txn that removes a tiered
// topic, so the remote data of a deleted topic is never forgotten even if
// every broker crashes right after. The remote log managers of all
// brokers sweep the markers (tier/remote/deleted.go): they delete the
// objects under "<topic>-<topicID hex>/" and the remote/<topicID hex>/
// records, then ForgetDeletedTopic removes the marker. While a marker
// exists PutRemoteSegment refuses writes for that topic id, so a copy in
// flight on a slow leader cannot re-create records behind the sweep.
const deletedTopicsDir = "deleted-topics/"

// deletedRecord is the value of a deleted-topics/<id> key.
type deletedRecord struct {
	Topic string `json:"topic"`
}

func (k keys) deletedTopics() string { return k.root + deletedTopicsDir }
func (k keys) deletedTopic(id metadata.TopicID) string {
	return k.deletedTopics() + hex.EncodeToString(id[:])
}
func (k keys) remoteTopic(id metadata.TopicID) string {
	return k.root + remoteDir + hex.EncodeToString(id[:]) + "/"
}

// deletedMarkerOps returns the op recording topic (id) as deleted when its
// remote data may exist: remote storage is enabled in its configs, or
// remote-segment records exist for its id (tiering was on earlier).
func (s *Store) deletedMarkerOps(ctx context.Context, name string, rec topicRecord) ([]clientv3.Op, error) {
	tiered, _, err := config.TopicOverrideBool(rec.Configs, "remote.storage.enable")
	if err != nil {
		s.log.Warn("etcdstore: unreadable remote.storage.enable; looking for remote records instead", "topic", name, "err", err)
	}
	if !tiered {
		resp, err := s.cli.Get(ctx, s.keys.remoteTopic(rec.ID), clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return nil, fmt.Errorf("etcdstore: look for remote segments of %q: %w", name, unavailable(err))
		}
		tiered = resp.Count > 0
	}
	if !tiered {
		return nil, nil
	}
	b, err := json.Marshal(deletedRecord{Topic: name})
	if err != nil {
		return nil, fmt.Errorf("etcdstore: encode deleted-topic marker: %w", err)
	}
	return []clientv3.Op{clientv3.OpPut(s.keys.deletedTopic(rec.ID), string(b))}, nil
}

// ListDeletedTopics returns the deleted tiered topics whose remote data
// may still exist: their ids and names, in id order.
func (s *Store) ListDeletedTopics(ctx context.Context) (ids []metadata.TopicID, topics []string, err error) {
	dir := s.keys.deletedTopics()
	resp, err := s.cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, nil, fmt.Errorf("etcdstore: list deleted topics: %w", unavailable(err))
	}
	for _, kv := range resp.Kvs {
		raw, err := hex.DecodeString(strings.TrimPrefix(string(kv.Key), dir))
		var rec deletedRecord
		if err == nil && len(raw) == len(metadata.TopicID{}) {
			err = json.Unmarshal(kv.Value, &rec)
		}
		if err != nil || len(raw) != len(metadata.TopicID{}) || rec.Topic == "" {
			s.log.Warn("etcdstore: skipping malformed deleted-topic marker", "key", string(kv.Key), "err", err)
			continue
		}
		ids = append(ids, metadata.TopicID(raw))
		topics = append(topics, rec.Topic)
	}
	return ids, topics, nil
}

// DeleteRemoteTopic removes every remote-segment record and fence of the
// topic id, all partitions. Deleting nothing is not an error.
func (s *Store) DeleteRemoteTopic(ctx context.Context, id metadata.TopicID) error {
	if _, err := s.cli.Delete(ctx, s.keys.remoteTopic(id), clientv3.WithPrefix()); err != nil {
		return fmt.Errorf("etcdstore: delete remote segments of topic %x: %w", id[:], unavailable(err))
	}
	return nil
}

// ForgetDeletedTopic removes the topic id's deleted-topic marker once its
// remote data is gone. Removing a missing marker is not an error.
func (s *Store) ForgetDeletedTopic(ctx context.Context, id metadata.TopicID) error {
	if _, err := s.cli.Delete(ctx, s.keys.deletedTopic(id)); err != nil {
		return fmt.Errorf("etcdstore: forget deleted topic %x: %w", id[:], unavailable(err))
	}
	return nil
}
