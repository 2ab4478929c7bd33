package local

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/strata-broker/strata/tier/producer"
	"github.com/strata-broker/strata/tier/segment"
)

// cleanerCheckpointFile holds the log cleaner's progress (CleanerPoint).
const cleanerCheckpointFile = "cleaner.checkpoint"

// CleanerPoint is the log cleaner's progress on a compacted log, kept
// across restarts so that a restarted broker does not clean the whole log
// again: every offset below FirstDirtyOffset has been cleaned, and the
// earliest delete horizon of a tombstone the last pass kept is
// DeleteHorizonMs (math.MaxInt64 when none).
type CleanerPoint struct {
	FirstDirtyOffset int64
	DeleteHorizonMs  int64
}

// CleanerPoint returns the cleaner's progress; without a checkpoint
// nothing is known to be clean (FirstDirtyOffset 0) and no horizon is
// pending (DeleteHorizonMs math.MaxInt64).
func (l *Log) CleanerPoint() CleanerPoint {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cleanerPoint
}

// SetCleanerPoint records the cleaner's progress and persists it
// atomically.
func (l *Log) SetCleanerPoint(p CleanerPoint) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	return l.writeCleanerPoint(p)
}

// clampCleanerPoint moves the cleaner's progress back to offset after a
// truncation there (Kafka's maybeTruncateCheckpoint), so that records
// appended again are seen as dirty. Caller holds mu.
func (l *Log) clampCleanerPoint(offset int64) error {
	if l.cleanerPoint.FirstDirtyOffset <= offset {
		return nil
	}
	p := l.cleanerPoint
	p.FirstDirtyOffset = offset
	return l.writeCleanerPoint(p)
}

// writeCleanerPoint persists p and makes it current. Caller holds mu.
func (l *Log) writeCleanerPoint(p CleanerPoint) error {
	body := fmt.Sprintf("strata-cleaner-checkpoint 1\nfirst-dirty-offset %d\ndelete-horizon-ms %d\n", p.FirstDirtyOffset, p.DeleteHorizonMs)
	if err := segment.WriteFileAtomic(filepath.Join(l.dir, cleanerCheckpointFile), []byte(body)); err != nil {
		return fmt.Errorf("write cleaner checkpoint: %w", err)
	}
	l.cleanerPoint = p
	return nil
}

// readCleanerPoint loads the cleaner checkpoint; a missing or unreadable
// file yields the zero progress.
func readCleanerPoint(dir string) CleanerPoint {
	none := CleanerPoint{DeleteHorizonMs: math.MaxInt64}
	data, err := os.ReadFile(filepath.Join(dir, cleanerCheckpointFile))
	if err != nil {
		return none
	}
	var p CleanerPoint
	n, err := fmt.Sscanf(string(data), "strata-cleaner-checkpoint 1\nfirst-dirty-offset %d\ndelete-horizon-ms %d\n", &p.FirstDirtyOffset, &p.DeleteHorizonMs)
	if err != nil || n != 2 || p.FirstDirtyOffset < 0 {
		return none
	}
	return p
}

// ProducerLastOffset is the last offset of the newest batch of the
// idempotent producer pid, if the producer is still active. The cleaner
// keeps that batch (emptied of records if need be), as Kafka does, so
// that the producer's sequence survives in the log.
func (l *Log) ProducerLastOffset(pid int64) (int64, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.producers == nil {
		return 0, false
	}
	m, ok := l.producers.Last(pid)
	return m.LastOffset, ok
}

// ProducerEpoch is the current epoch of producer pid, if the producer is
// still active. The cleaner keeps a producer's newest marker when no
// batch of that epoch follows it, as Kafka does, so that the epoch that
// fences older producers survives in the log.
func (l *Log) ProducerEpoch(pid int64) (int16, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.producers == nil {
		return 0, false
	}
	return l.producers.Epoch(pid)
}

// ProducerLastBatch is the newest batch of producer pid in the producer
// state, if the producer is still active: a coordinator writing
// transactional batches of a producer itself (transactional offset
// commits) numbers them after it.
func (l *Log) ProducerLastBatch(pid int64) (producer.BatchMeta, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.producers == nil {
		return producer.BatchMeta{}, false
	}
	return l.producers.Last(pid)
}
