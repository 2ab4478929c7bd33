package group

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/tier/local"
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

// commitTimeout is how long an append waits for the partition's high
// watermark to pass it (Kafka's offsets.commit.timeout.ms default).
const commitTimeout = 5 * time.Second

// replicated is what a replicated partition adds to Log
// (*partition.Partition has it): an append is committed once the high
// watermark passes it, and the wake-ups that tell when it moved.
type replicated interface {
	IsLeader() bool
	Wait(ch chan struct{})
	Unwait(ch chan struct{})
}

// leaderLog is a Log that appends only while this broker leads it at a
// given leader epoch (*partition.Partition has it).
type leaderLog interface {
	AppendAsLeader(leaderEpoch int32, batches []record.Batch, now int64) (local.AppendResult, error)
}

var _ leaderLog = (*partition.Partition)(nil)

// append writes recs as one batch to the shard's partition and returns
// once the batch is committed, as Kafka's coordinator appends with
// acks=all: the high watermark passed it (at once on a single broker).
// The append carries the leader epoch the shard was elected at, so a
// shard whose partition changed leader or epoch since writes nothing. A
// partition that is no longer led here (at that epoch) answers
// ErrNotCoordinator, a batch not committed within the commit timeout
// ErrCoordinatorNotAvailable (Kafka maps NOT_LEADER_OR_FOLLOWER and
// REQUEST_TIMED_OUT the same way).
func (sh *shard) append(recs []record.Record, now time.Time) error {
	ms := now.UnixMilli()
	buf := batchBufs.Get().(*[]byte)
	defer putBatchBuf(buf)
	b, err := record.Build(record.BuildOptions{FirstTimestamp: ms, Buf: *buf}, recs)
	if err != nil {
		return fmt.Errorf("group: build %s-%d batch: %w", TopicName, sh.index, err)
	}
	*buf = b // the log copies the batch, so the buffer is reused
	var res local.AppendResult
	if ll, ok := sh.log.(leaderLog); ok {
		res, err = ll.AppendAsLeader(sh.epoch, []record.Batch{b}, ms)
	} else {
		res, err = sh.log.Append([]record.Batch{b}, ms)
	}
	switch {
	case errors.Is(err, partition.ErrNotLeaderOrFollower):
		return fmt.Errorf("group: append to %s-%d at leader epoch %d: %w: %w", TopicName, sh.index, sh.epoch, ErrNotCoordinator, err)
	case err != nil:
		return fmt.Errorf("group: append to %s-%d: %w: %w", TopicName, sh.index, ErrCoordinatorNotAvailable, err)
	}
	return sh.awaitCommitted(res.LastOffset+1, sh.timeout)
}

// batchBufs pools the buffers commits build their batch in (the log
// writes the batch and keeps none of it); putBatchBuf keeps only those up to
// maxPooledBuf.
var batchBufs = sync.Pool{New: func() any { return new([]byte) }}

func putBatchBuf(b *[]byte) {
	if cap(*b) > maxPooledBuf {
		return
	}
	*b = (*b)[:0]
	batchBufs.Put(b)
}

// awaitCommitted waits until the high watermark reaches until, the
// partition stops being led here, the shard is resigned or timeout passes.
func (sh *shard) awaitCommitted(until int64, timeout time.Duration) error {
	r, ok := sh.log.(replicated)
	if !ok || sh.log.HighWatermark() >= until {
		return nil
	}
	if timeout <= 0 {
		timeout = commitTimeout
	}
	wake := make(chan struct{}, 1)
	defer r.Unwait(wake)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.Wait(wake)
		switch {
		case sh.log.HighWatermark() >= until:
			return nil
		case !r.IsLeader():
			return fmt.Errorf("group: %s-%d lost its leadership before offset %d was committed: %w", TopicName, sh.index, until-1, ErrNotCoordinator)
		}
		select {
		case <-wake:
		case <-sh.stop:
			return fmt.Errorf("group: %s-%d resigned before offset %d was committed: %w", TopicName, sh.index, until-1, ErrNotCoordinator)
		case <-deadline.C:
			return fmt.Errorf("group: %s-%d: offset %d not replicated within %v: %w", TopicName, sh.index, until-1, timeout, ErrCoordinatorNotAvailable)
		}
	}
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
