package remote

import (
	"context"
	"fmt"
)

// effective resolves local.retention.* (-2 follows the total retention).
func effective(localV, total int64) int64 {
	if localV == -2 {
		return total
	}
	return localV
}

// expireLocal deletes the oldest sealed local segments past
// local.retention.ms/bytes, but only those a finished remote copy covers.
//
// It needs no role or leader epoch, so pi being a stale snapshot (the
// partition changed leader since) is harmless: every replica applies local
// retention, as in Kafka, and what it deletes is bounded by the copies
// recorded COPY_FINISHED. Each such record was written fenced by the
// copying leader's epoch (a deposed leader's write fails once the new one
// has claimed the partition) and covers only data below that leader's
// high watermark, which every replica holds alike; copies are immutable,
// so a view older than the latest only under-counts.
func (m *Manager) expireLocal(pi PartitionInfo) error {
	deleteBefore := m.localExpiry(pi)
	if deleteBefore < 0 {
		return nil
	}
	if err := pi.Log.DeleteRecordsBefore(deleteBefore); err != nil {
		return fmt.Errorf("remote: local retention of %s-%d: %w", pi.Topic, pi.Partition, err)
	}
	m.log.Debug("remote: local segments deleted", "topic", pi.Topic, "partition", pi.Partition, "before", deleteBefore)
	return nil
}

// localExpiry is the offset local retention deletes the local log up to
// (-1: nothing to delete), from memory only: the cached copies and the
// local segment list.
func (m *Manager) localExpiry(pi PartitionInfo) int64 {
	cfg := pi.Config
	ms := effective(cfg.LocalRetentionMs, cfg.RetentionMs)
	maxBytes := effective(cfg.LocalRetentionBytes, cfg.RetentionBytes)
	if ms < 0 && maxBytes < 0 {
		return -1
	}
	segs, _ := m.segments(pi.TopicID, pi.Partition)
	covered := coveredUpTo(segs)
	locals := pi.Log.Segments()
	var total int64
	for _, s := range locals {
		total += s.Size
	}
	now := m.opts.Now().UnixMilli()
	deleteBefore := int64(-1)
	for _, s := range locals {
		if !s.Sealed || s.NextOffset-1 > covered {
			break
		}
		old := ms >= 0 && s.MaxTimestamp >= 0 && now-s.MaxTimestamp > ms
		big := maxBytes >= 0 && total-s.Size >= maxBytes
		if !old && !big {
			break
		}
		total -= s.Size
		deleteBefore = s.NextOffset
	}
	return deleteBefore
}

// expireRemote deletes the oldest remote copies past retention.ms/bytes
// (the whole log's bound), which advances the log start offset.
func (m *Manager) expireRemote(ctx context.Context, pi PartitionInfo) error {
	cfg := pi.Config
	if cfg.RetentionMs < 0 && cfg.RetentionBytes < 0 {
		return nil
	}
	segs, _ := m.segments(pi.TopicID, pi.Partition)
	fin := finished(segs)
	localStart := pi.Log.LogStartOffset()
	var total int64
	for _, s := range pi.Log.Segments() {
		total += s.Size
	}
	for _, s := range fin {
		if s.EndOffset < localStart {
			total += s.Size // only the part that exists remotely alone
		}
	}
	now := m.opts.Now().UnixMilli()
	changed := false
	for _, s := range fin {
		old := cfg.RetentionMs >= 0 && s.MaxTimestamp >= 0 && now-s.MaxTimestamp > cfg.RetentionMs
		big := cfg.RetentionBytes >= 0 && total-s.Size >= cfg.RetentionBytes
		if !old && !big {
			break
		}
		if err := m.removeCopy(ctx, pi, s); err != nil {
			return err
		}
		if s.EndOffset < localStart {
			total -= s.Size
		}
		changed = true
	}
	if !changed {
		return nil
	}
	segs, err := m.refresh(ctx, pi.TopicID, pi.Partition, pi.Topic)
	if err != nil {
		return err
	}
	return m.writeManifest(ctx, pi, segs)
}
