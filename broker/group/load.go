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
	"github.com/strata-broker/strata/tier/record"
)

// loaded is the state a partition's log replays to: the last offset record
// per group and partition, the last metadata record per group (nil: a
// tombstone).
type loaded struct {
	offsets  map[string]map[TopicPartition]Offset
	groups   map[string]*kmsg.GroupMetadataValue
	consumer map[string]*consumerRecords // KIP-848 groups (consumer_records.go)
	// pending are the offsets of transactions without a marker yet, by
	// producer id and group (txn_offsets.go).
	pending map[int64]map[string]map[TopicPartition]*pendingOffset
	records int
}

// load replays a newly led partition and then publishes its groups
// (coordshard retries it after a failed read).
func (c *Coordinator) load(sh *shard, start time.Time) error {
	st, err := readLog(sh.Log)
	if err != nil {
		return err
	}
	c.publish(sh, st, start)
	return nil
}

// readLog replays the log from its start to its end (coordlog.Replay).
func readLog(l Log) (*loaded, error) {
	st := &loaded{offsets: map[string]map[TopicPartition]Offset{}, groups: map[string]*kmsg.GroupMetadataValue{},
		consumer: map[string]*consumerRecords{}, pending: map[int64]map[string]map[TopicPartition]*pendingOffset{}}
	if err := coordlog.ReplayBatches(TopicName, l, st.applyBatch); err != nil {
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
			st.supersede(k.Group, tp, true)
			return
		}
		o, ok := readOffsetValue(value)
		if !ok {
			return
		}
		if st.offsets[k.Group] == nil {
			st.offsets[k.Group] = map[TopicPartition]Offset{}
		}
		st.offsets[k.Group][tp] = o
		st.supersede(k.Group, tp, false)
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

// readOffsetValue decodes an OffsetCommitValue.
func readOffsetValue(value []byte) (Offset, bool) {
	var v kmsg.OffsetCommitValue
	if v.ReadFrom(value) != nil {
		return Offset{}, false
	}
	o := Offset{Offset: v.Offset, LeaderEpoch: -1, Metadata: v.Metadata, CommitTimestamp: v.CommitTimestamp, ExpireTimestamp: -1}
	if v.Version >= 3 {
		o.LeaderEpoch = v.LeaderEpoch
	}
	if v.Version == 1 {
		o.ExpireTimestamp = v.ExpireTimestamp
	}
	return o, true
}

// applyBatch folds one batch into the state: a transactional batch's
// offsets stay pending until their producer's marker, which commits or
// drops them, as Kafka's loader does.
func (st *loaded) applyBatch(b record.Batch, recs []record.Record) {
	switch {
	case b.IsControl():
		m, ok, err := b.EndTxnMarker()
		if err != nil || !ok {
			return
		}
		st.completeTxn(b.ProducerID(), m.Commit)
	case b.IsTransactional():
		for _, r := range recs {
			st.applyTxn(b.ProducerID(), r.Key, r.Value)
		}
	default:
		for _, r := range recs {
			st.apply(r.Key, r.Value)
		}
	}
}

// applyTxn adds a transactional offset record to its producer's pending
// offsets; transactions hold nothing else.
func (st *loaded) applyTxn(pid int64, key, value []byte) {
	if len(key) < 2 || value == nil {
		return
	}
	st.records++
	if v := int16(binary.BigEndian.Uint16(key)); v != 0 && v != 1 {
		return
	}
	var k kmsg.OffsetCommitKey
	if k.ReadFrom(key) != nil {
		return
	}
	o, ok := readOffsetValue(value)
	if !ok {
		return
	}
	if st.pending[pid] == nil {
		st.pending[pid] = map[string]map[TopicPartition]*pendingOffset{}
	}
	if st.pending[pid][k.Group] == nil {
		st.pending[pid][k.Group] = map[TopicPartition]*pendingOffset{}
	}
	st.pending[pid][k.Group][TopicPartition{k.Topic, k.Partition}] = &pendingOffset{Offset: o}
}

// supersede applies a later non-transactional offset record (or its
// tombstone, deleted) of group and tp to the pending offsets, as
// groupCore.supersede and removeOffsets do.
func (st *loaded) supersede(group string, tp TopicPartition, deleted bool) {
	for _, groups := range st.pending {
		if p := groups[group][tp]; p != nil {
			if deleted {
				delete(groups[group], tp)
			} else {
				p.superseded = true
			}
		}
	}
}

// completeTxn applies producer pid's marker: COMMIT turns its pending
// offsets that nothing superseded into committed ones, ABORT drops them.
func (st *loaded) completeTxn(pid int64, commit bool) {
	groups := st.pending[pid]
	delete(st.pending, pid)
	if !commit {
		return
	}
	for name, offs := range groups {
		for tp, p := range offs {
			if p.superseded {
				continue
			}
			if st.offsets[name] == nil {
				st.offsets[name] = map[TopicPartition]Offset{}
			}
			st.offsets[name][tp] = p.Offset
		}
	}
}

// publish installs a loaded partition's groups, unless the shard was
// resigned meanwhile, and starts the restored members' sessions.
func (c *Coordinator) publish(sh *shard, st *loaded, start time.Time) {
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
	txnGroups := map[int64]map[string]bool{}
	for pid, byGroup := range st.pending {
		for name, offs := range byGroup {
			if len(offs) == 0 {
				continue
			}
			g := groups[name]
			if g == nil {
				g = newClassicGroup(c, sh, name)
				groups[name] = g
			}
			gc := g.core()
			if gc.pendingTxn == nil {
				gc.pendingTxn = map[int64]map[TopicPartition]*pendingOffset{}
			}
			gc.pendingTxn[pid] = offs
			if txnGroups[pid] == nil {
				txnGroups[pid] = map[string]bool{}
			}
			txnGroups[pid][name] = true
		}
	}
	list := make([]group, 0, len(groups))
	for _, g := range groups {
		list = append(list, g)
	}
	if !c.Publish(sh, start, func() {
		sh.groups = groups // shared from here on: read only under the table's lock
		sh.txnGroups = txnGroups
	}) {
		return
	}
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
	c.log.Log(context.Background(), lvl, "loaded group coordinator partition", "partition", sh.Index, "epoch", sh.Epoch,
		"records", st.records, "groups", len(list), "offsets", nOffsets, "took", time.Since(start))
}
