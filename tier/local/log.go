package local

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/strata-broker/strata/tier/producer"
	"github.com/strata-broker/strata/tier/segment"
)

// Log is the hot local log of one partition. See the package doc for the
// directory layout and the concurrency model.
type Log struct {
	dir    string
	logger *slog.Logger

	// mu guards everything below it; appends, rolls, truncations, flushes
	// and the segment list take it exclusively, reads share it.
	mu            sync.RWMutex
	cfg           Config
	segs          []*segment.Segment // by base offset; never empty while open
	producers     *producer.State
	epochs        *epochCache // leader-epoch history
	recoveryPoint int64       // offsets below it are fdatasynced
	lastFlushMs   int64
	firstAppendMs int64  // wall clock of the active segment's first append; 0: none yet
	rollTarget    int64  // the async flusher may advance the recovery point to it
	truncations   uint64 // bumped by every truncation, so a stale async flush is ignored
	failed        error  // sticky: after a failed write every append fails the same way
	cleanerPoint  CleanerPoint
	closed        bool

	leo      atomic.Int64 // log end offset, readable without mu
	logStart atomic.Int64 // log start offset, readable without mu
	hw       atomic.Int64 // the partition's high watermark as last reported (OnHighWatermarkUpdated), written without mu

	flushReq chan struct{} // wakes the roll flusher (buffered, coalescing)
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// SegmentInfo describes one segment, for retention and the uploader.
type SegmentInfo struct {
	BaseOffset   int64
	NextOffset   int64
	Size         int64
	MaxTimestamp int64 // -1 when empty
	// Sealed: the log rolled past the segment; its files no longer change
	// (until a truncation reaches into it).
	Sealed        bool
	LogPath       string
	IndexPath     string
	TimeIndexPath string
	// TxnIndexPath is the transaction index, which exists only once the
	// segment holds an aborted transaction.
	TxnIndexPath string

	// seg identifies the segment for ReadSegment and ReplaceSegments: a
	// segment truncated, deleted or replaced meanwhile is a different one.
	seg *segment.Segment
}

// Open opens (creating if needed) the partition log in dir and recovers
// it: with the clean-shutdown marker the segments are only loaded, without
// it the segments after the recovery point are scanned and a torn tail is
// truncated. The producer state is rebuilt from the newest usable snapshot.
// A nil logger means slog.Default().
func Open(dir string, cfg Config, logger *slog.Logger) (*Log, error) {
	if logger == nil {
		logger = slog.Default()
	}
	l := &Log{
		dir:      dir,
		logger:   logger.With("log", dir),
		cfg:      cfg.withDefaults(),
		flushReq: make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	if err := l.recover(); err != nil {
		l.closeSegments()
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	l.wg.Add(1)
	go l.rollFlusher()
	return l, nil
}

// SetConfig replaces the configuration (topic config changes); it applies
// to the next append.
func (l *Log) SetConfig(cfg Config) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cfg = cfg.withDefaults()
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// LogStartOffset is the first offset a read may ask for.
func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }

// LogEndOffset is the offset the next appended batch gets (LEO).
func (l *Log) LogEndOffset() int64 { return l.leo.Load() }

// RecoveryPoint is the offset below which the log is known to be on
// stable storage; an unclean restart rescans from there.
func (l *Log) RecoveryPoint() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.recoveryPoint
}

// Segments describes the segments, oldest first; only the last is
// unsealed.
func (l *Log) Segments() []SegmentInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]SegmentInfo, 0, len(l.segs))
	for _, s := range l.segs {
		out = append(out, SegmentInfo{
			BaseOffset:    s.BaseOffset(),
			NextOffset:    s.NextOffset(),
			Size:          s.Size(),
			MaxTimestamp:  s.MaxTimestamp(),
			Sealed:        s.Sealed(),
			LogPath:       s.LogPath(),
			IndexPath:     s.IndexPath(),
			TimeIndexPath: s.TimeIndexPath(),
			TxnIndexPath:  s.TxnIndexPath(),
			seg:           s,
		})
	}
	return out
}

// Flush fdatasyncs every segment with unflushed data and advances the
// recovery point to the log end.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	return l.flushLocked()
}

// Close flushes the log, snapshots the producer state at the log end,
// writes the recovery-point checkpoint and the clean-shutdown marker, and
// closes the segments. Outstanding Slices stay readable until released. A
// log whose writes failed is closed without the marker, so the next Open
// recovers it.
func (l *Log) Close() error {
	l.stopFlusher()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.failed
	if err == nil {
		err = l.flushLocked()
	}
	if err == nil {
		err = l.takeSnapshot(l.leo.Load())
	}
	cerr := l.closeSegments()
	if err == nil && cerr == nil {
		err = segment.WriteFileAtomic(filepath.Join(l.dir, cleanShutdownFile), nil)
	}
	if err = errors.Join(err, cerr); err != nil {
		return fmt.Errorf("close log %s: %w", l.dir, err)
	}
	return nil
}

// DeletedSuffix ends the name of a log directory moved aside by Delete
// (Kafka's "-delete" directories).
const DeletedSuffix = "-delete"

// Delete closes the log and moves its directory aside (topic deletion) to
// trash, a sibling named <dir>.<random id>-delete as Kafka names it, which
// the caller removes when convenient: unlinking files just written waits
// for their writeback (seconds for gigabytes), which must not hold up the
// caller. Slices read before stay readable.
func (l *Log) Delete() (trash string, err error) {
	l.stopFlusher()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, s := range l.segs {
		s.Abandon()
	}
	l.segs = nil
	var id [16]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	trash = l.dir + "." + hex.EncodeToString(id[:]) + DeletedSuffix
	if err := os.Rename(l.dir, trash); err != nil {
		return "", fmt.Errorf("delete log %s: %w", l.dir, err)
	}
	return trash, nil
}

// closeSegments closes every segment and forgets them.
func (l *Log) closeSegments() error {
	var errs []error
	for _, s := range l.segs {
		errs = append(errs, s.Close())
	}
	l.segs = nil
	return errors.Join(errs...)
}

// stopFlusher stops the roll flusher and waits for it.
func (l *Log) stopFlusher() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// active is the last segment, the one appends go to. Caller holds mu.
func (l *Log) active() *segment.Segment { return l.segs[len(l.segs)-1] }

// segmentOptions are the options new and reopened segments get. Caller
// holds mu (or owns the log exclusively).
func (l *Log) segmentOptions() segment.Options {
	return segment.Options{IndexIntervalBytes: l.cfg.IndexIntervalBytes, CacheWindow: l.cfg.PageCacheWindow, Logger: l.logger, Files: l.cfg.Files}
}

// writeCheckpoint persists the log start offset and recovery point, after
// the leader epochs up to it. Caller holds mu.
func (l *Log) writeCheckpoint() error {
	if err := l.epochs.sync(); err != nil {
		return err
	}
	return writeCheckpoint(l.dir, l.logStart.Load(), l.recoveryPoint)
}

// usable reports why the log cannot take writes, or nil. Caller holds mu.
func (l *Log) usable() error {
	if l.closed {
		return ErrClosed
	}
	return l.failed
}
