package group

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/coordlog"
)

// loadRetry is the wait before loading a partition again after a failed
// read.
const loadRetry = time.Second

// loaded is the state a partition's log replays to: the last offset record
// per group and partition, the last metadata record per group (nil: a
// tombstone).
type loaded struct {
	offsets  map[string]map[TopicPartition]Offset
	groups   map[string]*kmsg.GroupMetadataValue
	consumer map[string]*consumerRecords // KIP-848 groups (consumer_records.go)
	records  int
}

// load replays a newly led partition and then publishes its groups,
// retrying after read failures until the shard is resigned.
func (c *Coordinator) load(sh *shard) {
	start := time.Now()
	for {
		st, err := readLog(sh.log)
		if err == nil {
			c.publish(sh, st, time.Since(start))
			return
		}
		c.log.Error("load group coordinator partition", "partition", sh.index, "err", err)
		select {
		case <-sh.stop:
			return
		case <-time.After(loadRetry):
		}
	}
}

// readLog replays the log from its start to its end (coordlog.Replay).
func readLog(l Log) (*loaded, error) {
	st := &loaded{offsets: map[string]map[TopicPartition]Offset{}, groups: map[string]*kmsg.GroupMetadataValue{}, consumer: map[string]*consumerRecords{}}
	if err := coordlog.Replay(TopicName, l, st.apply); err != nil {
		return nil, fmt.Errorf("group: %w", err)
	}
	return st, nil
}

// apply folds one record into the state. Records this coordinator does not
// know (other key versions, undecodable ones) are skipped.
func (st *loaded) apply(key, value []byte) {
	if len(key) < 2 {
		return
	}
	st.records++
	switch int16(binary.BigEndian.Uint16(key)) {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if k.ReadFrom(key) != nil {
			return
		}
		tp := TopicPartition{k.Topic, k.Partition}
		if value == nil {
			delete(st.offsets[k.Group], tp)
			return
		}
		var v kmsg.OffsetCommitValue
		if v.ReadFrom(value) != nil {
			return
		}
		o := Offset{Offset: v.Offset, LeaderEpoch: -1, Metadata: v.Metadata, CommitTimestamp: v.CommitTimestamp, ExpireTimestamp: -1}
		if v.Version >= 3 {
			o.LeaderEpoch = v.LeaderEpoch
		}
		if v.Version == 1 {
			o.ExpireTimestamp = v.ExpireTimestamp
		}
		if st.offsets[k.Group] == nil {
			st.offsets[k.Group] = map[TopicPartition]Offset{}
		}
		st.offsets[k.Group][tp] = o
	case 2:
		var k kmsg.GroupMetadataKey
		if k.ReadFrom(key) != nil {
			return
		}
		if value == nil {
			st.groups[k.Group] = nil
			return
		}
		v := kmsg.NewGroupMetadataValue()
		if v.ReadFrom(value) != nil {
			return
		}
		for i := range v.Members { // detach from the read buffer
			v.Members[i].Subscription = bytes.Clone(v.Members[i].Subscription)
			v.Members[i].Assignment = bytes.Clone(v.Members[i].Assignment)
		}
		st.groups[k.Group] = &v
	default:
		st.applyConsumer(key, value)
	}
}

// publish installs a loaded partition's groups, unless the shard was
// resigned meanwhile, and starts the restored members' sessions.
func (c *Coordinator) publish(sh *shard, st *loaded, took time.Duration) {
	groups := map[string]group{}
	for name, v := range st.groups {
		if v == nil {
			continue
		}
		g := newClassicGroup(c, sh, name)
		g.restore(v)
		groups[name] = g
	}
	for name, cr := range st.consumer {
		if cr == nil || cr.epoch == nil || st.groups[name] != nil && len(st.groups[name].Members) > 0 {
			continue
		}
		cg, err := restoreConsumerGroup(c, sh, name, cr)
		if err != nil {
			c.log.Warn("skip consumer group record", "group", name, "err", err)
			continue
		}
		groups[name] = cg
	}
	nOffsets := 0
	for name, offs := range st.offsets {
		if len(offs) == 0 {
			continue
		}
		g := groups[name]
		if g == nil {
			g = newClassicGroup(c, sh, name) // a group that only stores offsets
			groups[name] = g
		}
		g.core().offsets = offs
		nOffsets += len(offs)
	}
	list := make([]group, 0, len(groups))
	for _, g := range groups {
		list = append(list, g)
	}
	c.mu.Lock()
	if c.closed || c.shards[sh.index] != sh {
		c.mu.Unlock()
		return
	}
	sh.groups = groups // shared from here on: read only under c.mu
	sh.loaded = true
	c.mu.Unlock()
	for _, g := range list {
		gc := g.core()
		gc.mu.Lock()
		if !gc.removed {
			g.startSessions()
		}
		gc.mu.Unlock()
	}
	lvl := slog.LevelDebug
	if st.records > 0 {
		lvl = slog.LevelInfo
	}
	c.log.Log(context.Background(), lvl, "loaded group coordinator partition", "partition", sh.index, "epoch", sh.epoch,
		"records", st.records, "groups", len(list), "offsets", nOffsets, "took", took)
}
