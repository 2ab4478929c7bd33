package partition

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/strata-broker/strata/tier/remote"
	"github.com/strata-broker/strata/tier/segment"
)

// SetTier connects the partitions to the cold tier's reader (nil: no
// tiering). Call before the first Sync.
func (m *Manager) SetTier(r *remote.Reader) { m.tier = r }

// Location is where a read of one offset goes: the local log (the zero
// Location), or the finished remote copy that holds it.
type Location struct {
	seg  remote.Segment
	cold bool
}

// Cold reports whether the read goes to the tier.
func (l Location) Cold() bool { return l.cold }

// Locate is the one check that routes a read: an offset below the local
// log start of a tiered partition is cold, and Locate finds the finished
// remote copy holding it; every other offset is hot (the zero Location)
// and costs no I/O. A cold offset no copy holds is ErrOffsetOutOfRange
// (Kafka's answer for an offset the remote tier does not have). Finding
// the copy reads the tier's cached metadata; only when that is missing,
// or stale and without the offset, does it list the metadata, under ctx
// (remote.Reader.Locate), and when that fails the error wraps
// remote.ErrMetadataUnavailable, which is retriable.
func (p *Partition) Locate(ctx context.Context, offset int64) (Location, error) {
	if p.tier == nil || !p.Config().RemoteStorageEnable || offset >= p.log.LogStartOffset() {
		return Location{}, nil
	}
	seg, err := p.tier.Locate(ctx, p.TopicID, p.Index, offset)
	switch {
	case errors.Is(err, remote.ErrNotTiered):
		return Location{}, fmt.Errorf("%s-%d: offset %d below the local log start and not in the tier: %w", p.Topic, p.Index, offset, ErrOffsetOutOfRange)
	case err != nil:
		return Location{}, fmt.Errorf("%s-%d: locate offset %d in the tier: %w", p.Topic, p.Index, offset, err)
	}
	return Location{seg: seg, cold: true}, nil
}

// ReadCold reads whole batches from offset on out of the remote copy loc
// names (see Locate); everything tiered is below the high watermark.
func (p *Partition) ReadCold(ctx context.Context, loc Location, offset int64, maxBytes int) (remote.Slice, error) {
	if p.tier == nil || !loc.cold {
		return remote.Slice{}, ErrOffsetOutOfRange
	}
	return p.tier.ReadSegment(ctx, loc.seg, offset, maxBytes)
}

// ColdAbortedTxns returns the aborted transactions a read_committed
// fetch sends along with a cold read from offset in the copy loc names:
// those overlapping [offset, end of that copy], from the transaction
// indexes of the remote copies and, when their search does not complete,
// of the local segments (Kafka's RemoteLogManager.addAbortedTransactions).
// Like Kafka's upper bound, the range may name a transaction past the
// last batch read, which clients ignore.
func (p *Partition) ColdAbortedTxns(ctx context.Context, loc Location, offset int64) ([]segment.AbortedTxn, error) {
	if p.tier == nil || !loc.cold {
		return nil, nil
	}
	upTo := loc.seg.EndOffset + 1
	res, err := p.tier.CollectAbortedTxns(ctx, loc.seg, offset, upTo)
	if err != nil {
		return nil, fmt.Errorf("%s-%d: aborted transactions from %d: %w", p.Topic, p.Index, offset, err)
	}
	if res.Complete {
		return res.Aborted, nil
	}
	out := res.Aborted
	for _, a := range p.log.CollectAbortedTxns(offset, upTo).Aborted {
		// A local segment may still be held remotely too.
		if !slices.ContainsFunc(res.Aborted, func(b segment.AbortedTxn) bool { return b.LastOffset == a.LastOffset }) {
			out = append(out, a)
		}
	}
	return out, nil
}

// LocalLogStartOffset is the first offset on local disk (ListOffsets -4).
func (p *Partition) LocalLogStartOffset() int64 { return p.log.LogStartOffset() }

// TieredEndOffset is the last offset copied to the tier (ListOffsets -5),
// from the tier's cached metadata (no I/O); false when nothing is tiered.
func (p *Partition) TieredEndOffset() (int64, bool) {
	if p.tier == nil {
		return 0, false
	}
	return p.tier.HighestOffset(p.TopicID, p.Index)
}

// EpochForOffset is the leader epoch that wrote offset (-1: unknown), as
// Kafka's leader-epoch cache answers it for ListOffsets: from the local
// log's history, or, for an offset below the local log start, from the
// epochs of the remote copy holding it (the tier's cached metadata, no
// I/O).
func (p *Partition) EpochForOffset(offset int64) int32 {
	if offset < p.log.LogStartOffset() && p.tier != nil && p.Config().RemoteStorageEnable {
		if e, ok := p.tier.EpochForOffset(p.TopicID, p.Index, offset); ok {
			return e
		}
		return -1
	}
	if e, ok := p.log.EpochForOffset(offset); ok {
		return e
	}
	return -1
}

// tieredStart is the first offset held in the tier when it is below the
// local log start, from the tier's cached metadata (no I/O).
func (p *Partition) tieredStart() (int64, bool) {
	if p.tier == nil || !p.Config().RemoteStorageEnable {
		return 0, false
	}
	s, ok := p.tier.LogStartOffset(p.TopicID, p.Index)
	return s, ok && s < p.log.LogStartOffset()
}

// TierStatus is the partition's tiering state (what is copied, what
// waits to be, the last copy error), from the tier's cached metadata (no
// I/O); false when the broker has no tier.
func (p *Partition) TierStatus() (remote.Status, bool) {
	if p.tier == nil {
		return remote.Status{}, false
	}
	return p.tier.StatusOf(p.RemoteInfo()), true
}

// RemoteInfo is the partition as the remote log manager sees it.
func (p *Partition) RemoteInfo() remote.PartitionInfo {
	return remote.PartitionInfo{
		Topic: p.Topic, Partition: p.Index, TopicID: p.TopicID, Log: p.log,
		Leader: p.IsLeader(), LeaderEpoch: p.LeaderEpoch(), HighWatermark: p.HighWatermark(), Config: p.Config(),
	}
}

// OffsetForTimestamp finds the first record with a timestamp ≥ ts in the
// whole log: the tier's time indexes first (for offsets below the local
// log start), then the local log. A failed read of the tier is an error,
// not a fall-through to the local log, which would skip the cold records.
func (p *Partition) OffsetForTimestamp(ctx context.Context, ts int64) (offset, recordTs int64, ok bool, err error) {
	if _, tiered := p.tieredStart(); tiered {
		off, rts, found, err := p.tier.OffsetForTimestamp(ctx, p.TopicID, p.Index, ts)
		if err != nil {
			return 0, 0, false, fmt.Errorf("%s-%d: offset for timestamp %d in the tier: %w", p.Topic, p.Index, ts, err)
		}
		if found && off < p.log.LogStartOffset() {
			return off, rts, true, nil
		}
	}
	off, rts, found := p.log.OffsetForTimestamp(ts)
	return off, rts, found, nil
}

// StartAfterTier restarts an empty leader log just after the tier's last
// offset, so that a topic recreated from the bucket (strata tier restore)
// appends where the tiered data ends and reads every offset below cold.
// It returns the local log end and whether it moved; a log that holds
// records, a follower, or a tier that holds nothing at or past the log end
// is left alone. The tier's metadata is reloaded first (an error if it
// cannot be); the restart holds roleMu exclusively, so no append lands
// between the check that the log is empty and the restart.
func (p *Partition) StartAfterTier(ctx context.Context) (int64, bool, error) {
	leo := p.log.LogEndOffset()
	epoch := p.LeaderEpoch()
	if p.tier == nil || !p.IsLeader() || !p.Config().RemoteStorageEnable || leo != p.log.LogStartOffset() {
		return leo, false, nil
	}
	if err := p.tier.Refresh(ctx, p.TopicID, p.Index); err != nil {
		return leo, false, fmt.Errorf("partition %s-%d: %w", p.Topic, p.Index, err)
	}
	end, ok := p.tier.HighestOffset(p.TopicID, p.Index)
	if !ok || end < leo {
		return leo, false, nil
	}
	snap, err := p.tier.ProducerSnapshot(ctx, p.TopicID, p.Index, end+1)
	if err != nil {
		return leo, false, fmt.Errorf("partition %s-%d: producer state at %d from the tier: %w", p.Topic, p.Index, end+1, err)
	}
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	switch {
	case !p.IsLeader() || p.LeaderEpoch() != epoch:
		return leo, false, fmt.Errorf("partition %s-%d: start after the tier: %w", p.Topic, p.Index, ErrNotLeaderOrFollower)
	case p.log.LogEndOffset() != leo || p.log.LogStartOffset() != leo:
		return p.log.LogEndOffset(), false, nil // appended to meanwhile
	}
	if err := p.startAt(end+1, snap); err != nil {
		return leo, false, fmt.Errorf("partition %s-%d: start after the tier at %d: %w", p.Topic, p.Index, end+1, err)
	}
	return end + 1, true, nil
}

// StartAtTier restarts a follower's log (at leaderEpoch) empty at offset,
// below which the tier holds the partition, with the producer state the
// tier kept there (see remote.Reader.ProducerSnapshot): a follower that
// skips the tier (OFFSET_MOVED_TO_TIERED_STORAGE). Without tiering it is
// TruncateFullyAndStartAt. The snapshot is fetched before the role check,
// so applyState never waits on the bucket.
func (p *Partition) StartAtTier(ctx context.Context, leaderEpoch int32, offset int64) error {
	var snap []byte
	if p.tier != nil {
		s, err := p.tier.ProducerSnapshot(ctx, p.TopicID, p.Index, offset)
		if err != nil {
			return fmt.Errorf("producer state at %d from the tier: %w", offset, err)
		}
		snap = s
	}
	return p.asFollower(leaderEpoch, func() error { return p.startAt(offset, snap) })
}

// startAt restarts the log empty at offset with producer state snap.
// Caller holds roleMu.
func (p *Partition) startAt(offset int64, snap []byte) error {
	if err := p.log.TruncateFullyAndStartAtWithProducers(offset, snap); err != nil {
		return err
	}
	p.hw.Store(offset)
	return nil
}
