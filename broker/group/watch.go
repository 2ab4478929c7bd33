package group

import (
	"context"
	"time"

	"github.com/strata-broker/strata/broker/coordlog"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata"
)

// openRetry is how soon Run looks again for a led __consumer_offsets
// partition that the partition manager has not opened yet.
const openRetry = 100 * time.Millisecond

// Run keeps the coordinator in step with the metadata until ctx is done
// (and gives the KIP-848 assignors the cache's topics):
// it coordinates the __consumer_offsets partitions broker nodeID leads
// (loading each when it becomes leader or its leader epoch changes),
// resigns the others, and expires offsets every
// offsets.retention.check.interval.ms.
func (c *Coordinator) Run(ctx context.Context, nodeID int32, cache *metadata.Cache, parts *partition.Manager) {
	interval := c.cfg.RetentionCheckInterval
	if interval <= 0 {
		interval = 10 * time.Minute
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	c.SetTopics(func() []TopicInfo {
		ts := cache.Topics()
		out := make([]TopicInfo, 0, len(ts))
		for _, t := range ts {
			out = append(out, TopicInfo{Name: t.Name, ID: [16]byte(t.ID), Partitions: int32(len(t.Partitions))})
		}
		return out
	})
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
		case <-tick.C:
			if n := c.ExpireOffsets(); n > 0 {
				c.log.Info("expired committed offsets", "offsets", n)
			}
		}
	}
}
