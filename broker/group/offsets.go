package group

import (
	"errors"
	"slices"
	"sync"
	"time"

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

// CommitOffset is one partition's offset to commit.
type CommitOffset struct {
	TopicPartition
	Offset
}

// CommitOffsets stores offsets, all of one request in one batch. It
// returns one error per offset (nil: committed).
func (c *Coordinator) CommitOffsets(req CommitRequest) []error {
	errs := make([]error, len(req.Offsets))
	create := createNone
	if req.Generation < 0 {
		create = createClassic // a simple commit: a group that only stores offsets
	}
	err := c.withGroup(req.Group, create, func(g group) error {
		if err := g.validateOffsetCommit(req.MemberID, req.InstanceID, req.Generation, req.MemberEpochs); err != nil {
			return err
		}
		g.core().commit(req.Offsets, errs)
		return nil
	})
	if errors.Is(err, ErrGroupNotFound) && !req.MemberEpochs {
		// A generation for a group that does not exist: Kafka answers
		// ILLEGAL_GENERATION before OffsetCommit v9, GROUP_ID_NOT_FOUND
		// from v9 on.
		err = ErrIllegalGeneration
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
func (gc *groupCore) commit(offsets []CommitOffset, errs []error) {
	sc := commitBufs.Get().(*commitBuf)
	defer sc.put()
	recs := slices.Grow(sc.recs[:0], len(offsets))
	now := time.Now()
	size := 0
	for i := range offsets {
		if offsets[i].CommitTimestamp <= 0 {
			offsets[i].CommitTimestamp = now.UnixMilli()
		}
		if len(offsets[i].Metadata) > gc.c.cfg.MaxMetadataBytes {
			errs[i] = ErrMetadataTooLarge
			continue
		}
		size += offsetRecordSize(gc.name, offsets[i].TopicPartition, &offsets[i].Offset)
	}
	buf := slices.Grow(sc.buf[:0], size) // every key and value, in one buffer
	for i := range offsets {
		if errs[i] == nil {
			var r record.Record
			buf, r = offsetRecord(buf, gc.name, offsets[i].TopicPartition, &offsets[i].Offset)
			recs = append(recs, r)
		}
	}
	sc.recs, sc.buf = recs, buf
	if len(recs) == 0 {
		return
	}
	if err := gc.sh.append(recs, now); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
		return
	}
	for i := range offsets {
		if errs[i] == nil {
			gc.offsets[offsets[i].TopicPartition] = offsets[i].Offset
			gc.supersede(offsets[i].TopicPartition)
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
func (c *Coordinator) FetchOffsets(groupID string, tps []TopicPartition) (map[TopicPartition]Offset, error) {
	return c.FetchOffsetsAs(groupID, "", -1, tps)
}

// FetchOffsetsAs is FetchOffsets by a member of a KIP-848 group
// (OffsetFetch v9+): with memberEpoch ≥ 0 the member and its epoch are
// checked (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH). Classic groups do not
// check.
func (c *Coordinator) FetchOffsetsAs(groupID, memberID string, memberEpoch int32, tps []TopicPartition) (map[TopicPartition]Offset, error) {
	out, _, err := c.FetchStableOffsetsAs(groupID, memberID, memberEpoch, tps, false)
	return out, err
}

// FetchStableOffsetsAs is FetchOffsetsAs that, with requireStable
// (OffsetFetch v7+), also reports the returned or asked partitions an
// open transaction commits an offset of (UNSTABLE_OFFSET_COMMIT); both
// are read under one lock of the group.
func (c *Coordinator) FetchStableOffsetsAs(groupID, memberID string, memberEpoch int32, tps []TopicPartition, requireStable bool) (map[TopicPartition]Offset, map[TopicPartition]bool, error) {
	out := map[TopicPartition]Offset{}
	var unstable map[TopicPartition]bool
	err := c.withGroup(groupID, createNone, func(g group) error {
		if err := g.validateOffsetFetch(memberID, memberEpoch); err != nil {
			return err
		}
		gc := g.core()
		if tps == nil {
			for tp, o := range gc.offsets {
				out[tp] = o
			}
		} else {
			for _, tp := range tps {
				if o, ok := gc.offsets[tp]; ok {
					out[tp] = o
				}
			}
		}
		if requireStable && len(gc.pendingTxn) > 0 {
			unstable = map[TopicPartition]bool{}
			asked := tps
			if asked == nil {
				for tp := range out {
					asked = append(asked, tp)
				}
			}
			for _, tp := range asked {
				if gc.hasPendingTxn(tp) {
					unstable[tp] = true
				}
			}
		}
		return nil
	})
	if errors.Is(err, ErrGroupNotFound) {
		err = nil
	}
	return out, unstable, err
}

// DeleteOffsets deletes committed offsets (OffsetDelete): one error per
// partition, and the second result for the whole group. Offsets of topics
// an active consumer group subscribes to are kept (ErrSubscribedToTopic).
func (c *Coordinator) DeleteOffsets(groupID string, tps []TopicPartition) ([]error, error) {
	errs := make([]error, len(tps))
	err := c.withGroup(groupID, createNone, func(g group) error {
		if err := g.validateOffsetDelete(); err != nil {
			return err
		}
		var subs map[string]bool
		if !g.isEmpty() {
			subs = g.subscribedTopics()
		}
		var del []TopicPartition
		for i, tp := range tps {
			if subs[tp.Topic] {
				errs[i] = ErrSubscribedToTopic
				continue
			}
			del = append(del, tp)
		}
		return removeOffsets(g, del, false)
	})
	return errs, err
}

// removeOffsets writes tombstones for the given offsets and drops them. A
// group left empty and without offsets (or any group when dead is set) is
// removed: its metadata records get tombstones too and it leaves memory.
// Nothing changes if the write fails.
func removeOffsets(g group, tps []TopicPartition, dead bool) error {
	gc := g.core()
	var recs []record.Record
	var buf []byte
	gone := map[TopicPartition]bool{}
	for _, tp := range tps {
		if _, ok := gc.offsets[tp]; ok && !gone[tp] {
			gone[tp] = true
			var r record.Record
			buf, r = offsetRecord(buf, gc.name, tp, nil)
			recs = append(recs, r)
		}
	}
	dead = dead || g.isEmpty() && len(gc.offsets) == len(gone) && len(gc.pendingTxn) == 0
	if dead {
		recs = append(recs, g.tombstones()...)
	}
	if len(recs) > 0 {
		if err := gc.sh.append(recs, time.Now()); err != nil {
			return err
		}
	}
	for tp := range gone {
		delete(gc.offsets, tp)
		for _, pending := range gc.pendingTxn {
			delete(pending, tp)
		}
	}
	if dead {
		g.drop(ErrCoordinatorNotAvailable)
		gc.c.forget(g)
	}
	return nil
}

// expiredOffsets are the offsets offsets.retention.minutes has expired
// (Kafka's removeExpiredOffsets), as the group's offsetExpiration says:
// counted from when it became empty, or from their commit (offsets of
// topics it subscribes to stay). A commit with an explicit expire
// timestamp (OffsetCommit v2-v4) expires then.
func expiredOffsets(g group, now time.Time, retention time.Duration) []TopicPartition {
	sinceEmpty, ok := g.offsetExpiration()
	if !ok {
		return nil
	}
	var subs map[string]bool
	if !sinceEmpty {
		subs = g.subscribedTopics()
	}
	gc := g.core()
	nowMs, ret := now.UnixMilli(), retention.Milliseconds()
	var out []TopicPartition
	for tp, o := range gc.offsets {
		if subs[tp.Topic] {
			continue
		}
		base := o.CommitTimestamp
		if sinceEmpty {
			base = gc.stateTime.UnixMilli()
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
		gc := g.core()
		gc.mu.Lock()
		if !gc.removed {
			tps := expiredOffsets(g, now, c.cfg.OffsetsRetention)
			if len(tps) > 0 || g.isEmpty() && len(gc.offsets) == 0 && len(gc.pendingTxn) == 0 {
				if err := removeOffsets(g, tps, false); err != nil {
					c.log.Warn("expire offsets", "group", gc.name, "err", err)
				} else {
					n += len(tps)
				}
			}
		}
		gc.mu.Unlock()
	}
	return n
}
