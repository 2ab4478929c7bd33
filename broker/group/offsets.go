package group

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/tier/record"
)

// CommitRequest is an OffsetCommit. Generation -1 with an empty member id
// is a "simple" commit of a group that only stores offsets.
type CommitRequest struct {
	Group      string
	MemberID   string
	InstanceID *string
	Generation int32 // the member epoch for KIP-848 groups
	Offsets    []CommitOffset
	// MemberEpochs (OffsetCommit v9+): the request may come from a KIP-848
	// member; older versions are refused for those.
	MemberEpochs bool
}

// checkConsumerCommit validates a commit to a KIP-848 group: admin commits
// (generation < 0) only while it has no members, otherwise the member and
// its current epoch.
func (g *Group) checkConsumerCommit(req *CommitRequest) error {
	cg := g.consumer
	if req.Generation < 0 && len(cg.members) == 0 {
		return nil
	}
	m := cg.members[req.MemberID]
	switch {
	case m == nil:
		return ErrUnknownMemberID
	case !req.MemberEpochs:
		return ErrUnsupportedVersion
	case req.Generation != m.epoch:
		return fmt.Errorf("%w: epoch %d, the member is at %d", ErrStaleMemberEpoch, req.Generation, m.epoch)
	}
	return nil
}

// CommitOffset is one partition's offset to commit.
type CommitOffset struct {
	TopicPartition
	Offset
}

// CommitOffsets stores offsets, all of one request in one batch. It
// returns one error per offset (nil: committed).
func (c *Coordinator) CommitOffsets(req CommitRequest) []error {
	errs := make([]error, len(req.Offsets))
	err := c.withGroup(req.Group, req.Generation < 0, func(g *Group) error {
		if g.consumer != nil {
			if err := g.checkConsumerCommit(&req); err != nil {
				return err
			}
			g.commit(req.Offsets, errs)
			return nil
		}
		if g.fenced(req.InstanceID, req.MemberID) {
			return ErrFencedInstanceID
		}
		if req.Generation >= 0 || g.state != Empty {
			m := g.members[req.MemberID]
			switch {
			case m == nil:
				return ErrUnknownMemberID
			case req.Generation != g.generation:
				return ErrIllegalGeneration
			case g.state == CompletingRebalance:
				return ErrRebalanceInProgress
			}
			g.touch(m)
		}
		g.commit(req.Offsets, errs)
		return nil
	})
	if errors.Is(err, ErrGroupNotFound) {
		err = ErrIllegalGeneration // a generation for a group that does not exist
	}
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// commit writes the offsets whose metadata fits, then applies them.
// Offsets without a commit timestamp get the current time.
func (g *Group) commit(offsets []CommitOffset, errs []error) {
	sc := commitBufs.Get().(*commitBuf)
	defer sc.put()
	recs := slices.Grow(sc.recs[:0], len(offsets))
	now := time.Now()
	size := 0
	for i := range offsets {
		if offsets[i].CommitTimestamp <= 0 {
			offsets[i].CommitTimestamp = now.UnixMilli()
		}
		if len(offsets[i].Metadata) > g.c.cfg.MaxMetadataBytes {
			errs[i] = ErrMetadataTooLarge
			continue
		}
		size += offsetRecordSize(g.name, offsets[i].TopicPartition, &offsets[i].Offset)
	}
	buf := slices.Grow(sc.buf[:0], size) // every key and value, in one buffer
	for i := range offsets {
		if errs[i] == nil {
			var r record.Record
			buf, r = offsetRecord(buf, g.name, offsets[i].TopicPartition, &offsets[i].Offset)
			recs = append(recs, r)
		}
	}
	sc.recs, sc.buf = recs, buf
	if len(recs) == 0 {
		return
	}
	if err := g.sh.append(recs, now); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return
	}
	for i := range offsets {
		if errs[i] == nil {
			g.offsets[offsets[i].TopicPartition] = offsets[i].Offset
		}
	}
}

// commitBuf holds a commit's records and the buffer of their keys and
// values until the batch is built from them (record.Build copies them), so
// that commits reuse them (commitBufs).
type commitBuf struct {
	recs []record.Record
	buf  []byte
}

// commitBufs pools commitBufs; put keeps only those up to maxPooledBuf.
var commitBufs = sync.Pool{New: func() any { return new(commitBuf) }}

// maxPooledBuf bounds the key and value bytes a pooled commitBuf keeps.
const maxPooledBuf = 64 << 10

func (b *commitBuf) put() {
	if cap(b.buf) > maxPooledBuf {
		return
	}
	clear(b.recs)
	b.recs, b.buf = b.recs[:0], b.buf[:0]
	commitBufs.Put(b)
}

// FetchOffsets returns the group's committed offsets of tps, or of every
// partition when tps is nil. Partitions without a commit are left out; an
// unknown group has none.
func (c *Coordinator) FetchOffsets(group string, tps []TopicPartition) (map[TopicPartition]Offset, error) {
	return c.FetchOffsetsAs(group, "", -1, tps)
}

// FetchOffsetsAs is FetchOffsets by a member of a KIP-848 group
// (OffsetFetch v9+): with memberEpoch ≥ 0 the member and its epoch are
// checked (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH). Classic groups do not
// check.
func (c *Coordinator) FetchOffsetsAs(group, memberID string, memberEpoch int32, tps []TopicPartition) (map[TopicPartition]Offset, error) {
	out := map[TopicPartition]Offset{}
	err := c.withGroup(group, false, func(g *Group) error {
		if cg := g.consumer; cg != nil && memberEpoch >= 0 {
			m := cg.members[memberID]
			if m == nil {
				return ErrUnknownMemberID
			}
			if m.epoch != memberEpoch {
				return fmt.Errorf("%w: epoch %d, the member is at %d", ErrStaleMemberEpoch, memberEpoch, m.epoch)
			}
		}
		if tps == nil {
			for tp, o := range g.offsets {
				out[tp] = o
			}
			return nil
		}
		for _, tp := range tps {
			if o, ok := g.offsets[tp]; ok {
				out[tp] = o
			}
		}
		return nil
	})
	if errors.Is(err, ErrGroupNotFound) {
		err = nil
	}
	return out, err
}

// DeleteOffsets deletes committed offsets (OffsetDelete): one error per
// partition, and the second result for the whole group. Offsets of topics
// an active consumer group subscribes to are kept (ErrSubscribedToTopic).
func (c *Coordinator) DeleteOffsets(group string, tps []TopicPartition) ([]error, error) {
	errs := make([]error, len(tps))
	err := c.withGroup(group, false, func(g *Group) error {
		var subs map[string]bool
		switch {
		case g.empty():
		case g.consumer != nil:
			subs = g.consumerTopics()
		case g.protocolType == "consumer":
			subs = g.subscribedTopics()
		default:
			return ErrNonEmptyGroup
		}
		var del []TopicPartition
		for i, tp := range tps {
			if subs[tp.Topic] {
				errs[i] = ErrSubscribedToTopic
				continue
			}
			del = append(del, tp)
		}
		return g.removeOffsets(del, false)
	})
	return errs, err
}

// subscribedTopics parses the consumer-protocol subscriptions of the
// members; nil when a subscription cannot be parsed (then no topic counts
// as subscribed, as in Kafka).
func (g *Group) subscribedTopics() map[string]bool {
	out := map[string]bool{}
	for _, m := range g.members {
		var s kmsg.ConsumerMemberMetadata
		if err := s.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return nil
		}
		for _, t := range s.Topics {
			out[t] = true
		}
	}
	return out
}

// consumerTopics are the topics the members of a KIP-848 group subscribe
// to, by name or regex.
func (g *Group) consumerTopics() map[string]bool {
	topics := g.c.topicsByName()
	out := map[string]bool{}
	for _, m := range g.consumer.members {
		for _, name := range m.topics {
			out[name] = true
		}
		for _, t := range m.resolve(topics) {
			out[t.Name] = true
		}
	}
	return out
}

// removeOffsets writes tombstones for the given offsets and drops them. An
// Empty group left without offsets and without members about to join with
// a handed-out member id (or every group when dead is set) turns
// Dead: its metadata gets a tombstone too (if it ever had a generation)
// and it leaves memory. Nothing changes if the write fails.
func (g *Group) removeOffsets(tps []TopicPartition, dead bool) error {
	var recs []record.Record
	var buf []byte
	gone := map[TopicPartition]bool{}
	for _, tp := range tps {
		if _, ok := g.offsets[tp]; ok && !gone[tp] {
			gone[tp] = true
			var r record.Record
			buf, r = offsetRecord(buf, g.name, tp, nil)
			recs = append(recs, r)
		}
	}
	dead = dead || g.empty() && len(g.offsets) == len(gone)
	if dead && g.generation > 0 {
		recs = append(recs, groupRecord(g.name, nil))
	}
	if dead && g.consumer != nil {
		recs = append(recs, g.consumer.tombstones()...)
	}
	if len(recs) > 0 {
		if err := g.sh.append(recs, time.Now()); err != nil {
			return err
		}
	}
	for tp := range gone {
		delete(g.offsets, tp)
	}
	if dead {
		g.drop(ErrCoordinatorNotAvailable)
		g.c.forget(g)
	}
	return nil
}

// expiredOffsets are the offsets offsets.retention.minutes has expired
// (Kafka's removeExpiredOffsets): in an Empty group, counted from when it
// became empty; in a Stable consumer group, those of topics no member
// subscribes to, counted from their commit; in an offsets-only group,
// counted from their commit. A commit with an explicit expire timestamp
// (OffsetCommit v2-v4) expires then.
func (g *Group) expiredOffsets(now time.Time, retention time.Duration) []TopicPartition {
	var subs map[string]bool
	fromEmpty := false
	switch {
	case g.protocolType != "" && g.empty():
		fromEmpty = true
	case g.consumer != nil:
		subs = g.consumerTopics()
	case g.protocolType == "consumer" && g.state == Stable:
		if subs = g.subscribedTopics(); subs == nil {
			return nil
		}
	case g.protocolType == "":
	default:
		return nil
	}
	nowMs, ret := now.UnixMilli(), retention.Milliseconds()
	var out []TopicPartition
	for tp, o := range g.offsets {
		if subs[tp.Topic] {
			continue
		}
		base := o.CommitTimestamp
		if fromEmpty {
			base = g.stateTime.UnixMilli()
		}
		if o.ExpireTimestamp >= 0 && nowMs >= o.ExpireTimestamp || o.ExpireTimestamp < 0 && nowMs-base >= ret {
			out = append(out, tp)
		}
	}
	return out
}

// ExpireOffsets runs one offsets-retention pass over every loaded group,
// as the broker does every offsets.retention.check.interval.ms. It returns
// how many offsets were removed.
func (c *Coordinator) ExpireOffsets() int {
	groups, _ := c.allGroups()
	now := time.Now()
	n := 0
	for _, g := range groups {
		g.mu.Lock()
		if !g.removed {
			tps := g.expiredOffsets(now, c.cfg.OffsetsRetention)
			if len(tps) > 0 || g.empty() && len(g.offsets) == 0 {
				if err := g.removeOffsets(tps, false); err != nil {
					c.log.Warn("expire offsets", "group", g.name, "err", err)
				} else {
					n += len(tps)
				}
			}
		}
		g.mu.Unlock()
	}
	return n
}
