package local

import (
	"fmt"
	"os"
	"slices"

	"github.com/strata-broker/strata/tier/producer"
	"github.com/strata-broker/strata/tier/segment"
)

// snapshotSuffix names producer-state snapshot files: <offset:020>.snapshot
// holds the state after every batch below offset.
const snapshotSuffix = ".snapshot"

// keptSnapshots is how many snapshots survive pruning.
const keptSnapshots = 2

// snapshotPath is the path of the snapshot at offset.
func (l *Log) snapshotPath(offset int64) string {
	return segment.FileName(l.dir, offset, snapshotSuffix)
}

// listSnapshots returns the offsets of the snapshot files, ascending.
func (l *Log) listSnapshots() []int64 {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		l.logger.Warn("cannot list producer snapshots", "err", err)
		return nil
	}
	var offs []int64
	for _, e := range entries {
		if off, suffix, ok := segment.ParseFileName(e.Name()); ok && suffix == snapshotSuffix {
			offs = append(offs, off)
		}
	}
	slices.Sort(offs)
	return offs
}

// removeSnapshot deletes the snapshot at offset, logging failures.
func (l *Log) removeSnapshot(offset int64) {
	if err := os.Remove(l.snapshotPath(offset)); err != nil && !os.IsNotExist(err) {
		l.logger.Warn("cannot remove producer snapshot", "offset", offset, "err", err)
	}
}

// takeSnapshot writes the producer state at offset (the log end at that
// moment) and prunes all but the newest snapshots. Caller holds mu.
func (l *Log) takeSnapshot(offset int64) error {
	if err := l.producers.WriteSnapshot(l.snapshotPath(offset)); err != nil {
		return err
	}
	offs := l.listSnapshots()
	for _, off := range offs[:max(0, len(offs)-keptSnapshots)] {
		l.removeSnapshot(off)
	}
	return nil
}

// loadProducerState rebuilds l.producers: snapshots past the log end are
// deleted, the newest snapshot at or below limit that loads is used, and
// the batches from its offset to the log end are replayed from their
// headers. Without a usable snapshot the whole log is replayed. Caller
// holds mu (or owns the log exclusively).
func (l *Log) loadProducerState(limit int64) error {
	leo := l.leo.Load()
	state, from := producer.NewState(), int64(0)
	offs := l.listSnapshots()
	for i := len(offs) - 1; i >= 0; i-- {
		off := offs[i]
		if off > leo {
			l.removeSnapshot(off)
			continue
		}
		if off > limit {
			continue
		}
		st, err := producer.LoadSnapshot(l.snapshotPath(off))
		if err != nil {
			l.logger.Warn("dropping unusable producer snapshot", "offset", off, "err", err)
			l.removeSnapshot(off)
			continue
		}
		state, from = st, off
		break
	}
	n, err := l.replay(state, from)
	if err != nil {
		return fmt.Errorf("rebuild producer state: %w", err)
	}
	l.producers = state
	l.logger.Debug("rebuilt producer state", "snapshot", from, "replayed", n, "producers", state.Len())
	return nil
}

// replay feeds the headers of the batches at or after from into state,
// and the markers of the control batches (read whole), adding the
// transactions they aborted to the segments' transaction indexes where
// missing; it returns how many batches it read. Caller holds mu.
func (l *Log) replay(state *producer.State, from int64) (int, error) {
	n := 0
	for _, s := range l.segs {
		if s.NextOffset() <= from {
			continue
		}
		for h, err := range s.Batches(from) {
			if err != nil {
				return n, err
			}
			n++
			switch {
			case h.ProducerID < 0:
			case h.Control:
				if err := l.replayMarker(state, s, h); err != nil {
					return n, err
				}
			default:
				state.Update(headerMeta(h))
			}
		}
	}
	return n, nil
}

// headerMeta is the producer-state record of a stored batch.
func headerMeta(h segment.BatchHeader) producer.BatchMeta {
	return producer.BatchMeta{
		ProducerID:    h.ProducerID,
		Epoch:         h.ProducerEpoch,
		FirstSeq:      h.BaseSequence,
		LastSeq:       h.LastSequence,
		FirstOffset:   h.BaseOffset,
		LastOffset:    h.LastOffset,
		MaxTimestamp:  h.MaxTimestamp,
		Transactional: h.Transactional,
	}
}

// ExpireProducers forgets the producers with no ongoing transaction whose
// last batch or marker is older than producer.id.expiration.ms at nowMs
// (Kafka's ProducerStateManager.removeExpiredProducers), and returns how
// many it removed. The partition manager runs it periodically; a roll
// does too.
func (l *Log) ExpireProducers(nowMs int64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expireProducers(nowMs)
}

// expireProducers is ExpireProducers with mu held.
func (l *Log) expireProducers(nowMs int64) int {
	if l.producers == nil {
		return 0
	}
	n := l.producers.ExpireBefore(nowMs - l.cfg.ProducerIDExpirationMs)
	if n > 0 {
		l.logger.Debug("expired idle producers", "count", n)
	}
	return n
}
