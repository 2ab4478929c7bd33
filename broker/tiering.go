package broker

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata/etcdstore"
	"github.com/strata-broker/strata/tier/objstore/backend"
	"github.com/strata-broker/strata/tier/remote"
)

// remoteCacheDir is the chunk cache of cold reads, inside the first log
// dir (not a partition directory: RemoveStray leaves it alone).
const remoteCacheDir = "remote-log-cache"

// tiering is the remote log manager of the broker; the zero value (tiering
// off) does nothing.
type tiering struct{ m *remote.Manager }

// openTiering builds the remote log manager when
// remote.log.storage.system.enable is set and connects the partitions'
// cold reads to it. Call before the first parts.Sync.
func (s *Server) openTiering(ctx context.Context, store *etcdstore.Store, parts *partition.Manager) (*tiering, error) {
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
	m, err := remote.New(obj, store, src, opts)
	if err != nil {
		return nil, fmt.Errorf("start remote log manager: %w", err)
	}
	parts.SetTier(m.Reader())
	return &tiering{m: m}, nil
}

// Run copies and expires segments until ctx is done.
func (t *tiering) Run(ctx context.Context) {
	if t.m != nil {
		t.m.Run(ctx)
	}
}

// Close drops the chunk cache.
func (t *tiering) Close() error {
	if t.m != nil {
		return t.m.Close()
	}
	return nil
}
