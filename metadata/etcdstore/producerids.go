package etcdstore

import (
	"context"
	"fmt"
	"math"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// AllocateProducerIDs reserves the block [first, first+n). The key
// producer-ids/next holds the next free id in decimal (absent = 0); the
// block is taken with a txn guarded by the key's mod revision, and a lost
// race retries with the value the txn's else branch returned. Ids are
// therefore unique across brokers and restarts; a broker that dies
// leaves its unused ids unused, as in Kafka.
func (s *Store) AllocateProducerIDs(ctx context.Context, n int64) (int64, error) {
	const op = "allocate producer ids"
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, fmt.Errorf("etcdstore: %s: block size %d must be positive", op, n)
	}
	key := s.keys.producerIDs()
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	kvs := resp.Kvs
	for range maxCASAttempts {
		var next, modRev int64
		if len(kvs) > 0 {
			modRev = kvs[0].ModRevision
			if next, err = strconv.ParseInt(string(kvs[0].Value), 10, 64); err != nil || next < 0 {
				return 0, fmt.Errorf("etcdstore: %s: corrupt value %q at %s", op, kvs[0].Value, key)
			}
		}
		if next > math.MaxInt64-n {
			return 0, fmt.Errorf("etcdstore: %s: id space exhausted at %d", op, next)
		}
		tresp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", modRev)).
			Then(clientv3.OpPut(key, strconv.FormatInt(next+n, 10))).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return 0, writeErr(op, err)
		}
		if tresp.Succeeded {
			return next, nil
		}
		kvs = tresp.Responses[0].GetResponseRange().GetKvs()
	}
	return 0, fmt.Errorf("etcdstore: %s: gave up after %d contended attempts", op, maxCASAttempts)
}
