package etcdstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/metadata"
)

// reassignmentsDir holds one key per partition being reassigned:
// reassignments/<topic>/<partition>, value a reassignmentRecord (JSON).
// Any broker writes it (AlterPartitionReassignments); the controller
// drives the partition to the target and deletes it. The metadata cache
// does not track these keys.
const reassignmentsDir = "reassignments/"

// reassignmentRecord is the value of reassignments/<topic>/<p>.
type reassignmentRecord struct {
	Target   []int32 `json:"target"`
	Original []int32 `json:"original"`
}

func (k keys) reassignments() string { return k.root + reassignmentsDir }
func (k keys) reassignment(topic string, p int32) string {
	return k.reassignments() + topic + "/" + strconv.FormatInt(int64(p), 10)
}

// PutReassignment records (or replaces) the reassignment request of one
// partition.
func (s *Store) PutReassignment(ctx context.Context, r metadata.Reassignment) error {
	op := fmt.Sprintf("put reassignment of %s-%d", r.Topic, r.Partition)
	if err := s.checkOpen(op); err != nil {
		return err
	}
	if err := metadata.ValidateTopicName(r.Topic); err != nil {
		return fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	val := mustJSON(reassignmentRecord{Target: r.Target, Original: r.Original})
	if _, err := s.cli.Put(ctx, s.keys.reassignment(r.Topic, r.Partition), val); err != nil {
		return writeErr(op, err)
	}
	return nil
}

// Reassignments lists every pending reassignment request, in key order.
func (s *Store) Reassignments(ctx context.Context) ([]metadata.Reassignment, error) {
	const op = "list reassignments"
	if err := s.checkOpen(op); err != nil {
		return nil, err
	}
	dir := s.keys.reassignments()
	resp, err := s.cli.Get(ctx, dir, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	out := make([]metadata.Reassignment, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		tp := strings.TrimPrefix(string(kv.Key), dir)
		i := strings.LastIndexByte(tp, '/')
		if i <= 0 {
			continue
		}
		p, err := strconv.ParseInt(tp[i+1:], 10, 32)
		if err != nil || p < 0 {
			continue
		}
		var rec reassignmentRecord
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			s.log.Warn("etcdstore: skipping malformed reassignment", "key", string(kv.Key), "err", err)
			continue
		}
		out = append(out, metadata.Reassignment{Topic: tp[:i], Partition: int32(p), Target: rec.Target, Original: rec.Original, Revision: kv.ModRevision})
	}
	return out, nil
}

// DeleteReassignment removes a finished reassignment request unless it
// was replaced since it was listed (its mod revision is no longer r's).
func (s *Store) DeleteReassignment(ctx context.Context, r metadata.Reassignment) error {
	op := fmt.Sprintf("delete reassignment of %s-%d", r.Topic, r.Partition)
	if err := s.checkOpen(op); err != nil {
		return err
	}
	key := s.keys.reassignment(r.Topic, r.Partition)
	_, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", r.Revision)).
		Then(clientv3.OpDelete(key)).
		Commit()
	if err != nil {
		return fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	return nil
}
