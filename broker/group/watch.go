package group

import (
	"context"
	"time"

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
		if c.follow(nodeID, cache, parts) {
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

// follow elects and resigns partitions as the metadata says. It reports
// whether a partition led here is not open yet.
func (c *Coordinator) follow(nodeID int32, cache *metadata.Cache, parts *partition.Manager) (missing bool) {
	led := c.Led()
	t, ok := cache.Topic(TopicName)
	if !ok {
		c.SetPartitionCount(0)
		for idx := range led {
			c.Resign(idx)
		}
		return false
	}
	c.SetPartitionCount(int32(len(t.Partitions)))
	for idx, st := range t.Partitions {
		if st.Leader != nodeID {
			if _, ok := led[idx]; ok {
				c.Resign(idx)
			}
			continue
		}
		p, ok := parts.Get(TopicName, idx)
		if !ok || p.TopicID != t.ID {
			missing = true
			continue
		}
		c.Elect(idx, st.LeaderEpoch, p)
	}
	for idx := range led {
		if _, ok := t.Partitions[idx]; !ok {
			c.Resign(idx)
		}
	}
	return missing
}
