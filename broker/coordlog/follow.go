package coordlog

import (
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata"
)

// Shards is the side of a coordinator that Follow drives: the internal
// partitions it leads (as broker/group's and broker/txn's Coordinator).
type Shards interface {
	// Led returns the partitions led and their epochs.
	Led() map[int32]int32
	// SetPartitionCount records the topic's partition count (0: no topic).
	SetPartitionCount(n int32)
	// Elect leads partition index at leader epoch epoch (a no-op when
	// already so).
	Elect(index, epoch int32, l Log)
	// Resign gives up partition index.
	Resign(index int32)
}

// Follow elects and resigns the partitions of topic that broker nodeID
// leads as the metadata says. It reports whether a partition led here is
// not open yet (the caller looks again soon).
func Follow(topic string, c Shards, nodeID int32, cache *metadata.Cache, parts *partition.Manager) (missing bool) {
	led := c.Led()
	t, ok := cache.Topic(topic)
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
		p, ok := parts.Get(topic, idx)
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
