package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/strata-broker/strata/metadata"
)

// Status is one partition's tiering state, for operators (tier status,
// metrics).
type Status struct {
	RemoteStart  int64 // first tiered offset (-1: nothing tiered)
	RemoteEnd    int64 // last tiered offset (-1: nothing tiered)
	RemoteBytes  int64 // bytes of the finished copies
	RemoteCopies int   // finished copies
	CopyBacklog  int   // sealed, committed local segments not yet copied (leader)
	// CopyBacklogBytes is the size of those segments; only StatusOf
	// computes it.
	CopyBacklogBytes int64
	LastError        string
}

// Status reports a partition's tiering state from the loaded metadata.
func (m *Manager) Status(id metadata.TopicID, partition int32) Status {
	st := Status{RemoteStart: -1, RemoteEnd: -1}
	m.mu.Lock()
	v, ok := m.parts[pkey{id, partition}]
	var segs []Segment
	if ok {
		segs, st.CopyBacklog, st.LastError = v.segs, v.backlog, v.lastErr
	}
	m.mu.Unlock()
	for _, s := range finished(segs) {
		if st.RemoteStart < 0 {
			st.RemoteStart = s.BaseOffset
		}
		st.RemoteEnd = max(st.RemoteEnd, s.EndOffset)
		st.RemoteBytes += s.Size
		st.RemoteCopies++
	}
	return st
}

// StatusOf is Status with the copy backlog (segments and bytes) measured
// now from the partition's local log rather than after the last task; a
// follower has none.
func (m *Manager) StatusOf(pi PartitionInfo) Status {
	st := m.Status(pi.TopicID, pi.Partition)
	st.CopyBacklog, st.CopyBacklogBytes = m.backlog(pi)
	return st
}

// StatusOf is the Manager's StatusOf, for the partitions the reader
// serves: their tier state from the cached metadata view and the copy
// backlog measured now (no I/O).
func (r *Reader) StatusOf(pi PartitionInfo) Status { return r.m.StatusOf(pi) }

// backlog counts the leader's sealed, committed local segments past what
// is copied, and their bytes.
func (m *Manager) backlog(pi PartitionInfo) (n int, bytes int64) {
	if !pi.Leader || pi.Log == nil {
		return 0, 0
	}
	segs, _ := m.segments(pi.TopicID, pi.Partition)
	done, bound := copiedEnd(segs), copyBound(pi)
	for _, ls := range pi.Log.Segments() {
		if ls.Sealed && ls.NextOffset-1 > done && ls.NextOffset <= bound {
			n++
			bytes += ls.Size
		}
	}
	return n, bytes
}

// noteResult records a task's outcome and backlog and warns while copies
// fail with segments waiting.
func (m *Manager) noteResult(pi PartitionInfo, err error) {
	backlog, _ := m.backlog(pi)
	m.mu.Lock()
	if v, ok := m.parts[pkey{pi.TopicID, pi.Partition}]; ok {
		v.backlog, v.lastErr = backlog, ""
		if err != nil {
			v.lastErr = err.Error()
		}
	}
	m.mu.Unlock()
	if err != nil && !errors.Is(err, context.Canceled) {
		level := slog.LevelWarn
		if errors.Is(err, metadata.ErrUnavailable) {
			level = slog.LevelDebug // the metadata store logs its outage once
		}
		m.log.Log(context.Background(), level, "remote log task failed; local segments are kept until copied",
			"topic", pi.Topic, "partition", pi.Partition, "copy_backlog_segments", backlog, "err", err)
	}
}

// deleteAll removes every remote copy of a partition whose topic turned
// tiering off with remote.log.delete.on.disable (KIP-950).
func (m *Manager) deleteAll(ctx context.Context, pi PartitionInfo) error {
	segs, err := m.refresh(ctx, pi.TopicID, pi.Partition, pi.Topic)
	if err != nil || len(segs) == 0 {
		return err
	}
	for _, s := range segs {
		if s.State != DeleteFinished {
			if err := m.removeCopy(ctx, pi, s); err != nil {
				return err
			}
		}
		if err := m.meta.PutRemoteSegment(ctx, pi.TopicID, pi.Partition, s.Name(), nil, pi.LeaderEpoch); err != nil {
			return fmt.Errorf("remote: drop record %s: %w", s.Name(), err)
		}
	}
	if _, err := m.refresh(ctx, pi.TopicID, pi.Partition, pi.Topic); err != nil {
		return err
	}
	return m.writeManifest(ctx, pi, nil)
}
