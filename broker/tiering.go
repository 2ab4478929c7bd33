package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/objstore"
	"github.com/strata-broker/strata/tier/objstore/backend"
	"github.com/strata-broker/strata/tier/remote"
)

// remoteCacheDir is the chunk cache of cold reads, inside the first log
// dir (not a partition directory: RemoveStray leaves it alone).
const remoteCacheDir = "remote-log-cache"

// tiering is the remote log manager of the broker and its deleted-topic
// sweeper; the zero value (tiering off) does nothing.
type tiering struct {
	m     *remote.Manager
	sweep *remote.Sweeper
	store *countingStore // the manager's object store, counting failures
}

// countingStore counts the failed writes and deletes of an object store
// for the metrics (strata_remote_copy_errors_total); a canceled context
// (shutdown, a deposed leader's task) is not a failure.
type countingStore struct {
	objstore.ObjectStore
	putErrors, deleteErrors atomic.Int64
}

// Put implements objstore.ObjectStore.
func (c *countingStore) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	err := c.ObjectStore.Put(ctx, key, body, size)
	if err != nil && ctx.Err() == nil {
		c.putErrors.Add(1)
	}
	return err
}

// Delete implements objstore.ObjectStore.
func (c *countingStore) Delete(ctx context.Context, key string) error {
	err := c.ObjectStore.Delete(ctx, key)
	if err != nil && ctx.Err() == nil && !errors.Is(err, objstore.ErrNotExist) {
		c.deleteErrors.Add(1)
	}
	return err
}

// collector reports the remote tier's metrics (nothing while tiering is
// off); register it with the broker's registry.
func (t *tiering) collector(parts *partition.Manager) prometheus.Collector {
	return newRemoteCollector(t, parts)
}

// tierStore is what the remote log manager and the deleted-topic sweeper
// need of the metadata store.
type tierStore interface {
	metadata.RemoteSegments
	metadata.DeletedTopics
}

// openTiering builds the remote log manager when
// remote.log.storage.system.enable is set and connects the partitions'
// cold reads to it. Call before the first parts.Sync.
func (s *Server) openTiering(ctx context.Context, store tierStore, parts *partition.Manager) (*tiering, error) {
	if !s.cfg.RemoteLogStorageSystemEnable {
		return &tiering{}, nil
	}
	obj, err := backend.FromConfig(ctx, s.cfg)
	if err != nil {
		return nil, fmt.Errorf("open remote log storage: %w", err)
	}
	src := func() []remote.PartitionInfo {
		all := parts.All()
		out := make([]remote.PartitionInfo, len(all))
		for i, p := range all {
			out[i] = p.RemoteInfo()
		}
		return out
	}
	opts := remote.OptionsFromConfig(s.cfg, filepath.Join(s.cfg.LogDirs[0], remoteCacheDir), s.log)
	counted := &countingStore{ObjectStore: obj}
	m, err := remote.New(counted, store, src, opts)
	if err != nil {
		return nil, fmt.Errorf("start remote log manager: %w", err)
	}
	parts.SetTier(m.Reader())
	return &tiering{m: m, sweep: remote.NewSweeper(m, store), store: counted}, nil
}

// Run copies and expires segments, and removes the remote data of deleted
// topics, until ctx is done.
func (t *tiering) Run(ctx context.Context) {
	if t.m == nil {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { t.m.Run(ctx) })
	wg.Go(func() { t.sweep.Run(ctx) })
	wg.Wait()
}

// Close drops the chunk cache.
func (t *tiering) Close() error {
	if t.m != nil {
		return t.m.Close()
	}
	return nil
}
