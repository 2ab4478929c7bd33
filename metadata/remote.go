package metadata

import "context"

// RemoteSegments keeps the tier's remote-segment records, one per
// partition and segment copy by name, fenced by leader epoch: every write
// raises the partition's fence to the writer's leader epoch, and fails
// with ErrRemoteFenced when a newer epoch has written, so a deposed
// leader can never overwrite the new leader's records. Writes for a topic
// id with a deleted-topic marker fail with ErrRemoteTopicDeleted. The
// values belong to the tier; the store only fences them.
type RemoteSegments interface {
	// ListRemoteSegments returns the partition's records in name order.
	ListRemoteSegments(ctx context.Context, id TopicID, partition int32) (names []string, values [][]byte, err error)
	// PutRemoteSegment writes (value nil: deletes) the record name, which
	// must be non-empty and free of '/'; leaderEpoch must not be negative.
	PutRemoteSegment(ctx context.Context, id TopicID, partition int32, name string, value []byte, leaderEpoch int32) error
	// ClaimRemoteSegments raises the partition's fence to leaderEpoch and
	// returns the records as of then, in name order, in one step: once it
	// returns, no older leader can add a record the caller has not seen.
	ClaimRemoteSegments(ctx context.Context, id TopicID, partition int32, leaderEpoch int32) (names []string, values [][]byte, err error)
}

// DeletedTopics is what the tier's deleted-topic sweep needs: DeleteTopic
// of a tiered topic (remote.storage.enable, or remote-segment records
// exist for its id) leaves a marker in the same atomic step, so its
// remote data is never forgotten; the sweep deletes the data, then the
// marker.
type DeletedTopics interface {
	// ListDeletedTopics returns the deleted topics whose remote data may
	// remain: their ids and names, in id order.
	ListDeletedTopics(ctx context.Context) (ids []TopicID, topics []string, err error)
	// DeleteRemoteTopic removes every remote-segment record and fence of
	// the id, all partitions. Deleting nothing is not an error.
	DeleteRemoteTopic(ctx context.Context, id TopicID) error
	// ForgetDeletedTopic removes the id's marker. Removing a missing
	// marker is not an error.
	ForgetDeletedTopic(ctx context.Context, id TopicID) error
}

// TopicRestorer recreates a topic whose metadata was lost, from what the
// tier kept in the bucket (disaster recovery).
type TopicRestorer interface {
	// RestoreTopic writes the remote-segment records of each partition
	// (records[p]: name → value, fenced at the partition's leader epoch
	// in t.Partitions, after clearing any stale records and fence of the
	// partition), then creates the topic with t.ID — not a fresh id, since
	// the objects are keyed by it — as CreateTopic does. It fails with
	// ErrTopicExists when the name is taken and ErrTopicIDInUse when
	// another topic has the id, before writing anything.
	RestoreTopic(ctx context.Context, t Topic, records map[int32]map[string][]byte) (rev int64, err error)
}
