package group

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/coordlog"
	"github.com/strata-broker/strata/tier/record"
)

// Key versions of the records in __consumer_offsets, as Kafka writes them:
// an int16 version leads every key and tells the record's kind.
const (
	offsetKeyVersion   = 1 // OffsetCommitKey (0 and 1 are both read)
	groupKeyVersion    = 2 // GroupMetadataKey
	groupValueVersion  = 3 // GroupMetadataValue with instance ids (KIP-345)
	offsetValueVersion = 3 // OffsetCommitValue with leader epoch (KIP-320)
	offsetValueExpire  = 1 // OffsetCommitValue with an explicit expire timestamp
)

// append writes recs as one batch to the shard's partition and returns
// once the batch is committed (coordlog.Partition.Append: acks=all,
// fenced by the leader epoch the shard was elected at). A partition that
// is no longer led here (at that epoch) answers ErrNotCoordinator, a
// batch not committed within the commit timeout ErrCoordinatorNotAvailable
// (Kafka maps NOT_LEADER_OR_FOLLOWER and REQUEST_TIMED_OUT the same way).
func (sh *shard) append(recs []record.Record, now time.Time) error {
	err := sh.Part.Append(recs, now)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, coordlog.ErrNotLeader):
		return fmt.Errorf("group: %w: %w", ErrNotCoordinator, err)
	}
	return fmt.Errorf("group: %w: %w", ErrCoordinatorNotAvailable, err)
}

// offsetRecord appends the key and value of a committed offset's record
// (a nil o: its tombstone) to dst and returns the grown buffer and the
// record, whose key and value are capped views of it: one buffer sized
// with offsetRecordSize holds a whole batch of them.
func offsetRecord(dst []byte, group string, tp TopicPartition, o *Offset) ([]byte, record.Record) {
	start := len(dst)
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: group, Topic: tp.Topic, Partition: tp.Partition}
	dst = k.AppendTo(dst)
	r := record.Record{Key: dst[start:len(dst):len(dst)]}
	if o != nil {
		v := kmsg.OffsetCommitValue{
			Version:         offsetValueVersion,
			Offset:          o.Offset,
			LeaderEpoch:     o.LeaderEpoch,
			Metadata:        o.Metadata,
			CommitTimestamp: o.CommitTimestamp,
		}
		if o.ExpireTimestamp >= 0 {
			v.Version, v.ExpireTimestamp = offsetValueExpire, o.ExpireTimestamp
		}
		end := len(dst)
		dst = v.AppendTo(dst)
		r.Value = dst[end:len(dst):len(dst)]
	}
	return dst, r
}

// offsetRecordSize bounds the bytes offsetRecord appends: the key (version,
// group, topic, partition) and the larger value version (version, offset,
// metadata, commit and expire timestamps).
func offsetRecordSize(group string, tp TopicPartition, o *Offset) int {
	n := 2 + 2 + len(group) + 2 + len(tp.Topic) + 4
	if o != nil {
		n += 2 + 8 + 4 + 2 + len(o.Metadata) + 8 + 8
	}
	return n
}

// groupRecord is the record of a group's metadata; a nil v is its
// tombstone.
func groupRecord(group string, v *kmsg.GroupMetadataValue) record.Record {
	k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: group}
	r := record.Record{Key: k.AppendTo(nil)}
	if v != nil {
		r.Value = v.AppendTo(nil)
	}
	return r
}

// storeGroup writes the group's metadata with the given assignment (nil
// for an Empty group), as Kafka's GroupMetadataManager.storeGroup.
func (g *classicGroup) storeGroup(assign map[string][]byte) error {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		v.Protocol = kmsg.StringPtr(g.protocol)
	}
	if g.leader != "" && len(g.members) > 0 {
		v.Leader = kmsg.StringPtr(g.leader)
	}
	v.CurrentStateTimestamp = g.stateTime.UnixMilli()
	for _, id := range g.memberIDs() {
		m := g.members[id]
		mv := kmsg.NewGroupMetadataValueMember()
		mv.MemberID = m.id
		mv.InstanceID = m.instanceID
		mv.ClientID, mv.ClientHost = m.clientID, m.clientHost
		mv.RebalanceTimeoutMillis = int32(m.rebalanceTimeout / time.Millisecond)
		mv.SessionTimeoutMillis = int32(m.sessionTimeout / time.Millisecond)
		mv.Subscription = m.metadataFor(g.protocol)
		mv.Assignment = assign[id]
		if mv.Subscription == nil {
			mv.Subscription = []byte{}
		}
		if mv.Assignment == nil {
			mv.Assignment = []byte{}
		}
		v.Members = append(v.Members, mv)
	}
	return g.sh.append([]record.Record{groupRecord(g.name, &v)}, time.Now())
}

// restore rebuilds a group from its last metadata record: with members it
// is Stable at the stored generation (their sessions restart now),
// without it is Empty.
func (g *classicGroup) restore(v *kmsg.GroupMetadataValue) {
	g.protocolType = v.ProtocolType
	g.generation = v.Generation
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	if v.CurrentStateTimestamp >= 0 {
		g.stateTime = time.UnixMilli(v.CurrentStateTimestamp)
	}
	for _, mv := range v.Members {
		m := &classicMember{
			id:               mv.MemberID,
			instanceID:       mv.InstanceID,
			clientID:         mv.ClientID,
			clientHost:       mv.ClientHost,
			sessionTimeout:   time.Duration(mv.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(mv.RebalanceTimeoutMillis) * time.Millisecond,
			protocols:        []Protocol{{Name: g.protocol, Metadata: mv.Subscription}},
			assignment:       mv.Assignment,
		}
		if mv.RebalanceTimeoutMillis < 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.members[m.id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
	}
	g.state = Empty
	if len(g.members) > 0 {
		g.state = Stable
		if g.members[g.leader] == nil {
			g.leader = g.memberIDs()[0]
		}
	} else {
		g.leader = ""
	}
}
