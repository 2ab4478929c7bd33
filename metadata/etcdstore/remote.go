package etcdstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/metadata"
)

// Remote-segment metadata (tiered storage) lives under
//
//	remote/<topicID hex>/<partition>/fence          highest leader epoch that wrote, 10 digits
//	remote/<topicID hex>/<partition>/seg/<name>     one record per remote segment copy
//
// The values of seg records belong to tier/remote; the store only fences
// them: every write compares the fence with the writer's leader epoch in
// one transaction, so a deposed leader can never overwrite the new
// leader's records, and fails while the topic id has a deleted-topic
// marker (deleted.go), so nothing is recorded behind the deletion sweep.
const remoteDir = "remote/"

func (k keys) remotePartition(id metadata.TopicID, p int32) string {
	return k.root + remoteDir + hex.EncodeToString(id[:]) + "/" + strconv.FormatInt(int64(p), 10) + "/"
}

// ListRemoteSegments returns every remote-segment record of the partition
// by name, in name order.
func (s *Store) ListRemoteSegments(ctx context.Context, id metadata.TopicID, partition int32) (names []string, values [][]byte, err error) {
	dir := s.keys.remotePartition(id, partition) + "seg/"
	resp, err := s.cli.Get(ctx, dir, segmentsInOrder()...)
	if err != nil {
		return nil, nil, fmt.Errorf("etcdstore: list remote segments: %w", err)
	}
	names, values = splitRecords(dir, resp.Kvs)
	return names, values, nil
}

// segmentsInOrder reads every record under a partition's seg/ prefix, by
// name. The options are built per call: the closure WithSort returns
// writes to its captured arguments, so a shared one is a data race.
func segmentsInOrder() []clientv3.OpOption {
	return []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
}

// splitRecords turns the records under dir into names and values.
func splitRecords(dir string, kvs []*mvccpb.KeyValue) (names []string, values [][]byte) {
	for _, kv := range kvs {
		names = append(names, strings.TrimPrefix(string(kv.Key), dir))
		values = append(values, kv.Value)
	}
	return names, values
}

// PutRemoteSegment writes (value != nil) or deletes (value == nil) the
// record name, fenced by leaderEpoch: metadata.ErrRemoteFenced when a
// newer epoch has written for the partition,
// metadata.ErrRemoteTopicDeleted when the topic was deleted.
func (s *Store) PutRemoteSegment(ctx context.Context, id metadata.TopicID, partition int32, name string, value []byte, leaderEpoch int32) error {
	if leaderEpoch < 0 || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("etcdstore: put remote segment %q epoch %d: invalid argument", name, leaderEpoch)
	}
	key := s.keys.remotePartition(id, partition) + "seg/" + name
	op := clientv3.OpDelete(key)
	if value != nil {
		op = clientv3.OpPut(key, string(value))
	}
	if _, err := s.fenced(ctx, id, partition, leaderEpoch, op); err != nil {
		return writeErr("write remote segment "+name, err)
	}
	return nil
}

// ClaimRemoteSegments raises the partition's fence to leaderEpoch and
// returns its records as of that moment, in name order: a new leader's
// first step, after which no older leader can add a record it has not
// seen. metadata.ErrRemoteFenced when a newer epoch has written.
func (s *Store) ClaimRemoteSegments(ctx context.Context, id metadata.TopicID, partition int32, leaderEpoch int32) (names []string, values [][]byte, err error) {
	if leaderEpoch < 0 {
		return nil, nil, fmt.Errorf("etcdstore: claim remote segments epoch %d: invalid argument", leaderEpoch)
	}
	dir := s.keys.remotePartition(id, partition) + "seg/"
	resp, err := s.fenced(ctx, id, partition, leaderEpoch, clientv3.OpGet(dir, segmentsInOrder()...))
	if err != nil {
		return nil, nil, fmt.Errorf("etcdstore: claim remote segments: %w", err)
	}
	names, values = splitRecords(dir, resp.GetResponseRange().Kvs)
	return names, values, nil
}

// fenced runs op in one transaction with raising the partition's fence to
// leaderEpoch, unless a newer epoch holds the fence or the topic id is
// marked deleted; it returns op's response.
func (s *Store) fenced(ctx context.Context, id metadata.TopicID, partition int32, leaderEpoch int32, op clientv3.Op) (*pb.ResponseOp, error) {
	fence := s.keys.remotePartition(id, partition) + "fence"
	epoch := fmt.Sprintf("%010d", leaderEpoch)
	deleted := s.keys.deletedTopic(id)
	for range maxCASAttempts {
		cur, err := s.cli.Get(ctx, fence)
		if err != nil {
			return nil, fmt.Errorf("read remote fence: %w", err)
		}
		var rev int64
		if len(cur.Kvs) > 0 {
			if string(cur.Kvs[0].Value) > epoch {
				return nil, fmt.Errorf("%w: epoch %d, fence %s", metadata.ErrRemoteFenced, leaderEpoch, cur.Kvs[0].Value)
			}
			rev = cur.Kvs[0].ModRevision
		}
		resp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(fence), "=", rev), clientv3.Compare(clientv3.CreateRevision(deleted), "=", 0)).
			Then(clientv3.OpPut(fence, epoch), op).
			Else(clientv3.OpGet(deleted, clientv3.WithCountOnly())).
			Commit()
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			return resp.Responses[1], nil
		}
		if resp.Responses[0].GetResponseRange().GetCount() > 0 {
			return nil, metadata.ErrRemoteTopicDeleted
		}
	}
	return nil, errors.New("too much contention on the remote fence")
}
