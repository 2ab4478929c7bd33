package txn

import (
	"context"
	"time"

	"github.com/strata-broker/strata/broker/coordlog"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata"
)

// openRetry is how soon Run looks again for a led __transaction_state
// partition that the partition manager has not opened yet.
const openRetry = 100 * time.Millisecond

// Run keeps the coordinator in step with the metadata until ctx is done:
// it coordinates the __transaction_state partitions broker nodeID leads
// (loading each when it becomes leader or its leader epoch changes, the
// leader epoch being the coordinator epoch), resigns the others, and runs
// Sweep.
func (c *Coordinator) Run(ctx context.Context, nodeID int32, cache *metadata.Cache, parts *partition.Manager) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go c.Sweep(ctx)
	for {
		changed := cache.Changed()
		var retry <-chan time.Time
		if coordlog.Follow(TopicName, c, nodeID, cache, parts) {
			retry = time.After(openRetry)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-retry:
		}
	}
}
