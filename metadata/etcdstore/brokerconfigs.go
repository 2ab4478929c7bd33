package etcdstore

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/metadata"
)

// SetBrokerConfigs puts (or, for none, deletes) the dynamic configs key
// of broker id or of the cluster default. One key per entity, so the
// last writer wins.
func (s *Store) SetBrokerConfigs(ctx context.Context, id int32, configs map[string]string) (int64, error) {
	op := fmt.Sprintf("set dynamic configs of broker %d", id)
	if id == metadata.ClusterDefault {
		op = "set dynamic configs of the cluster default"
	}
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	if err := metadata.CheckConfigEntity(id); err != nil {
		return 0, fmt.Errorf("etcdstore: %s: %w", op, err)
	}
	var value string
	if len(configs) > 0 {
		value = mustJSON(brokerConfigsRecord{Configs: configs})
	}
	return s.putOrDelete(ctx, op, s.keys.brokerConfigs(id), value)
}

// putOrDelete puts value at key, or deletes key when value is empty, and
// returns the revision at which the cache shows the change (the current
// one when there was nothing to delete). One key per entity: the last
// writer wins.
func (s *Store) putOrDelete(ctx context.Context, op, key, value string) (int64, error) {
	if value == "" {
		resp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), ">", 0)).
			Then(clientv3.OpDelete(key)).
			Commit()
		if err != nil {
			return 0, writeErr(op, err)
		}
		if !resp.Succeeded { // nothing stored: nothing changes
			return s.cache.Revision(), nil
		}
		return s.visible(ctx, op, resp.Header.Revision)
	}
	resp, err := s.cli.Put(ctx, key, value)
	if err != nil {
		return 0, writeErr(op, err)
	}
	return s.visible(ctx, op, resp.Header.Revision)
}
