package local

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/strata-broker/strata/tier/segment"
)

// Files of a partition directory besides the segments and snapshots.
const (
	cleanShutdownFile = "clean-shutdown"
	checkpointFile    = "partition.checkpoint"
)

// writeCheckpoint atomically writes the checkpoint file:
//
//	strata-partition-checkpoint 1
//	log-start-offset <n>
//	recovery-point <n>
func writeCheckpoint(dir string, logStart, recoveryPoint int64) error {
	body := fmt.Sprintf("strata-partition-checkpoint 1\nlog-start-offset %d\nrecovery-point %d\n", logStart, recoveryPoint)
	if err := segment.WriteFileAtomic(filepath.Join(dir, checkpointFile), []byte(body)); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	return nil
}

// readCheckpoint reads the checkpoint file; ok is false when it is missing
// or unreadable (then everything is recovered from scratch).
func readCheckpoint(dir string) (logStart, recoveryPoint int64, ok bool) {
	data, err := os.ReadFile(filepath.Join(dir, checkpointFile))
	if err != nil {
		return 0, 0, false
	}
	n, err := fmt.Sscanf(string(data), "strata-partition-checkpoint 1\nlog-start-offset %d\nrecovery-point %d\n", &logStart, &recoveryPoint)
	if err != nil || n != 2 || logStart < 0 || recoveryPoint < 0 {
		return 0, 0, false
	}
	return logStart, recoveryPoint, true
}

// recover loads the directory into l: checkpoint, marker, segments (with
// the recovery scan when the shutdown was not clean), log start and end,
// and the producer state. Called by Open only.
func (l *Log) recover() error {
	markerPath := filepath.Join(l.dir, cleanShutdownFile)
	clean := false
	if _, err := os.Stat(markerPath); err == nil {
		clean = true
		// From here on a crash must trigger recovery again.
		if err := os.Remove(markerPath); err != nil {
			return fmt.Errorf("remove clean-shutdown marker: %w", err)
		}
		if err := segment.SyncDir(l.dir); err != nil {
			return err
		}
	}
	logStart, checkpointRP, ok := readCheckpoint(l.dir)
	if !ok {
		clean = false // without a recovery point nothing is known to be intact
	}
	if err := l.completeSwaps(); err != nil {
		return err
	}
	l.cleanerPoint = readCleanerPoint(l.dir)
	bases, err := l.listSegmentFiles()
	if err != nil {
		return err
	}
	rebuildFrom, err := l.loadSegments(bases, clean, checkpointRP)
	if err != nil {
		return err
	}
	if len(l.segs) == 0 {
		s, err := segment.Create(l.dir, logStart, l.segmentOptions())
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
	}
	leo := l.active().NextOffset()
	l.leo.Store(leo)
	l.logStart.Store(min(max(logStart, l.segs[0].BaseOffset()), leo))
	// Recovered segments were fdatasynced by the scan; loaded ones were
	// below the old recovery point.
	l.recoveryPoint = leo
	now := time.Now().UnixMilli()
	l.lastFlushMs = now
	if l.active().Size() > 0 {
		// The first append's time is not persisted; restart the roll clock.
		l.firstAppendMs = now
	}
	// The replay rebuilds the transaction indexes of the recovered
	// segments, so it starts at or below the first of them.
	snapshotLimit := min(checkpointRP, rebuildFrom)
	if clean {
		snapshotLimit = leo
	}
	if err := l.loadProducerState(snapshotLimit); err != nil {
		return err
	}
	for _, s := range l.segs {
		// Rebuilt entries are durable, like the rest of the scanned segment.
		if s.BaseOffset() >= rebuildFrom {
			if err := s.TxnIndex().Sync(); err != nil {
				return err
			}
		}
	}
	epochScan := checkpointRP
	if clean {
		epochScan = leo
	}
	if err := l.loadEpochs(epochScan); err != nil {
		return err
	}
	if err := l.writeCheckpoint(); err != nil {
		return err
	}
	l.logger.Debug("opened log", "clean", clean, "segments", len(l.segs), "logStart", l.logStart.Load(), "logEnd", leo)
	return nil
}

// listSegmentFiles returns the base offsets of the .log files, sorted, and
// removes leftovers: temporary files and indexes without a log.
func (l *Log) listSegmentFiles() ([]int64, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", l.dir, err)
	}
	var bases []int64
	indexes := map[int64][]string{}
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".tmp") {
			_ = os.Remove(filepath.Join(l.dir, name))
			continue
		}
		base, suffix, ok := segment.ParseFileName(name)
		switch {
		case !ok:
		case suffix == segment.LogSuffix:
			bases = append(bases, base)
		case suffix == segment.IndexSuffix || suffix == segment.TimeIndexSuffix || suffix == segment.TxnIndexSuffix:
			indexes[base] = append(indexes[base], name)
		}
	}
	slices.Sort(bases)
	for base, names := range indexes {
		if _, found := slices.BinarySearch(bases, base); !found {
			for _, name := range names {
				_ = os.Remove(filepath.Join(l.dir, name))
			}
		}
	}
	return bases, nil
}

// loadSegments opens the segments, sealing each but the last as it goes
// (so that a sealed segment's file goes to the FileCache before the next
// opens). Unless the shutdown was clean, every segment that may hold
// offsets at or after the recovery point is scanned; if a scan truncates a
// segment that is not the last, the later segments are deleted, since the
// log is broken there. The transaction indexes of the scanned segments
// are emptied, for the producer state's replay to rebuild them (as Kafka
// does); rebuildFrom is the first scanned segment's base (MaxInt64: none).
func (l *Log) loadSegments(bases []int64, clean bool, recoveryPoint int64) (rebuildFrom int64, err error) {
	rebuildFrom = math.MaxInt64
	for i, base := range bases {
		st, err := os.Stat(segment.FileName(l.dir, base, segment.LogSuffix))
		if err != nil {
			return rebuildFrom, fmt.Errorf("stat segment: %w", err)
		}
		// Open also rebuilds damaged segments by itself, so truncation is
		// measured against the size before opening.
		last := i == len(bases)-1
		opts := l.segmentOptions()
		opts.Recover = !clean && (last || bases[i+1] > recoveryPoint)
		s, err := segment.Open(l.dir, base, opts)
		if err != nil {
			return rebuildFrom, err
		}
		l.segs = append(l.segs, s)
		if opts.Recover {
			rebuildFrom = min(rebuildFrom, base)
			if err := s.TxnIndex().Reset(); err != nil {
				return rebuildFrom, err
			}
		}
		if s.Size() < st.Size() && !last {
			l.logger.Warn("log corrupt before its last segment; deleting the later segments",
				"segment", base, "deleted", len(bases)-i-1)
			var errs []error
			for _, later := range bases[i+1:] {
				errs = append(errs, segment.RemoveFiles(l.dir, later))
			}
			return rebuildFrom, errors.Join(errs...)
		}
		if !last {
			if err := s.Seal(); err != nil {
				return rebuildFrom, err
			}
		}
	}
	return rebuildFrom, nil
}
