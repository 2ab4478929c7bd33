package partition

import (
	"context"
	"errors"
	"fmt"

	"github.com/strata-broker/strata/tier/remote"
)

// SetTier connects the partitions to the cold tier's reader (nil: no
// tiering). Call before the first Sync.
func (m *Manager) SetTier(r *remote.Reader) { m.tier = r }

// IsCold is the one predicate that routes a read to the bucket: the topic
// is tiered, the offset is below the local log start and a finished remote
// copy holds it.
func (p *Partition) IsCold(offset int64) bool {
	return p.tier != nil && p.Config().RemoteStorageEnable && offset < p.log.LogStartOffset() &&
		p.tier.Covers(p.TopicID, p.Index, offset)
}

// ReadCold reads whole batches from offset on out of the tier (see
// IsCold); everything tiered is below the high watermark.
func (p *Partition) ReadCold(ctx context.Context, offset int64, maxBytes int) (remote.Slice, error) {
	if p.tier == nil {
		return remote.Slice{}, ErrOffsetOutOfRange
	}
	s, err := p.tier.Read(ctx, p.TopicID, p.Index, offset, maxBytes)
	if errors.Is(err, remote.ErrNotTiered) {
		return remote.Slice{}, ErrOffsetOutOfRange
	}
	return s, err
}

// LocalLogStartOffset is the first offset on local disk (ListOffsets -4).
func (p *Partition) LocalLogStartOffset() int64 { return p.log.LogStartOffset() }

// TieredEndOffset is the last offset copied to the tier (ListOffsets -5);
// false when nothing is tiered.
func (p *Partition) TieredEndOffset() (int64, bool) {
	if p.tier == nil {
		return 0, false
	}
	return p.tier.HighestOffset(p.TopicID, p.Index)
}

// tieredStart is the first offset held in the tier when it is below the
// local log start.
func (p *Partition) tieredStart() (int64, bool) {
	if p.tier == nil || !p.Config().RemoteStorageEnable {
		return 0, false
	}
	s, ok := p.tier.LogStartOffset(p.TopicID, p.Index)
	return s, ok && s < p.log.LogStartOffset()
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
// log start), then the local log.
func (p *Partition) OffsetForTimestamp(ctx context.Context, ts int64) (offset, recordTs int64, ok bool) {
	if _, tiered := p.tieredStart(); tiered {
		off, rts, found, err := p.tier.OffsetForTimestamp(ctx, p.TopicID, p.Index, ts)
		if err == nil && found && off < p.log.LogStartOffset() {
			return off, rts, true
		}
	}
	return p.log.OffsetForTimestamp(ts)
}

// StartAfterTier restarts an empty leader log just after the tier's last
// offset, so that a topic recreated from the bucket (strata tier restore)
// appends where the tiered data ends and reads every offset below cold.
// It returns the local log end and whether it moved; a log that holds
// records, a follower, or a tier that holds nothing at or past the log end
// is left alone. Call it before producers know of the partition: an
// append racing the restart would be dropped.
func (p *Partition) StartAfterTier(ctx context.Context) (int64, bool, error) {
	leo := p.log.LogEndOffset()
	if p.tier == nil || !p.IsLeader() || !p.Config().RemoteStorageEnable || leo != p.log.LogStartOffset() {
		return leo, false, nil
	}
	p.tier.Covers(p.TopicID, p.Index, leo) // loads the partition's metadata
	end, ok := p.tier.HighestOffset(p.TopicID, p.Index)
	if !ok || end < leo {
		return leo, false, nil
	}
	if err := p.StartAtTier(ctx, end+1); err != nil {
		return leo, false, fmt.Errorf("partition %s-%d: start after the tier at %d: %w", p.Topic, p.Index, end+1, err)
	}
	return end + 1, true, nil
}

// StartAtTier restarts the log empty at offset, below which the tier
// holds the partition, with the producer state the tier kept there (see
// remote.Reader.ProducerSnapshot): a follower that skips the tier
// (OFFSET_MOVED_TO_TIERED_STORAGE) or a restored leader. Without tiering
// it is TruncateFullyAndStartAt.
func (p *Partition) StartAtTier(ctx context.Context, offset int64) error {
	var snap []byte
	if p.tier != nil {
		s, err := p.tier.ProducerSnapshot(ctx, p.TopicID, p.Index, offset)
		if err != nil {
			return fmt.Errorf("producer state at %d from the tier: %w", offset, err)
		}
		snap = s
	}
	if err := p.log.TruncateFullyAndStartAtWithProducers(offset, snap); err != nil {
		return err
	}
	p.hw.Store(offset)
	return nil
}
