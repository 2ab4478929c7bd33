package local

import (
	"errors"
	"fmt"
	"time"

	"github.com/strata-broker/strata/tier/producer"
	"github.com/strata-broker/strata/tier/segment"
)

// DeleteRecordsBefore moves the log start offset up to offset (DeleteRecords,
// retention) and deletes the segments that lie wholly below it; the active
// segment is kept. The new start is checkpointed before any file goes, so
// it survives a restart. Offsets past the log end are ErrOffsetOutOfRange;
// offsets at or below the current start change nothing.
func (l *Log) DeleteRecordsBefore(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if leo := l.leo.Load(); offset > leo {
		return fmt.Errorf("delete records before %d past the log end %d: %w", offset, leo, ErrOffsetOutOfRange)
	}
	if offset <= l.logStart.Load() {
		return nil
	}
	l.logStart.Store(offset)
	if err := l.writeCheckpoint(); err != nil {
		return fmt.Errorf("delete records before %d: %w", offset, err)
	}
	if err := l.epochs.truncateFromStart(offset); err != nil {
		return fmt.Errorf("delete records before %d: %w", offset, err)
	}
	n := 0
	for n < len(l.segs)-1 && l.segs[n+1].BaseOffset() <= offset {
		n++
	}
	return l.dropOldest(n)
}

// dropOldest deletes the n oldest segments. Caller holds mu.
func (l *Log) dropOldest(n int) error {
	var errs []error
	for _, s := range l.segs[:n] {
		errs = append(errs, s.Delete())
	}
	l.segs = append(l.segs[:0:0], l.segs[n:]...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete segments: %w", err)
	}
	return nil
}

// TruncateTo removes every batch at or after offset (a follower dropping
// its divergent tail). A batch holding offset is removed whole, so the log
// end may end up below offset. The producer state is rebuilt for the new
// end. Truncating below the first segment empties the log and restarts it
// at offset.
func (l *Log) TruncateTo(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("truncate to %d: %w", offset, ErrOffsetOutOfRange)
	}
	if offset >= l.leo.Load() {
		return nil
	}
	if offset <= l.segs[0].BaseOffset() {
		return l.truncateFullyLocked(offset)
	}
	l.truncations++
	var errs []error
	for l.active().BaseOffset() >= offset {
		errs = append(errs, l.active().Delete())
		l.segs = l.segs[:len(l.segs)-1]
	}
	if _, err := l.active().TruncateTo(offset); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return l.fail(fmt.Errorf("truncate to %d: %w", offset, err))
	}
	leo := l.active().NextOffset()
	l.leo.Store(leo)
	l.logStart.Store(min(l.logStart.Load(), leo))
	l.recoveryPoint = min(l.recoveryPoint, leo)
	l.firstAppendMs = 0
	if l.active().Size() > 0 {
		l.firstAppendMs = time.Now().UnixMilli()
	}
	if err := l.loadProducerState(leo); err != nil {
		return l.fail(fmt.Errorf("truncate to %d: %w", offset, err))
	}
	if err := l.epochs.truncateFromEnd(leo); err != nil {
		return err
	}
	if err := l.clampCleanerPoint(leo); err != nil {
		return err
	}
	return l.writeCheckpoint()
}

// TruncateFullyAndStartAt deletes every segment and restarts the log empty
// at offset, which becomes both its start and end (a follower whose log
// fell behind the leader's start).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	return l.TruncateFullyAndStartAtWithProducers(offset, nil)
}

// TruncateFullyAndStartAtWithProducers is TruncateFullyAndStartAt that
// also takes the producer state at offset from a snapshot (the tier's copy
// of the segment ending just below offset), so idempotent producers keep
// their sequences across the jump, as Kafka's follower rebuilds them from
// the remote segment. An empty or unusable snapshot leaves the state empty.
func (l *Log) TruncateFullyAndStartAtWithProducers(offset int64, snapshot []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("truncate fully to %d: %w", offset, ErrOffsetOutOfRange)
	}
	if err := l.truncateFullyLocked(offset); err != nil || len(snapshot) == 0 {
		return err
	}
	path := l.snapshotPath(offset)
	if err := segment.WriteFileAtomic(path, snapshot); err != nil {
		return fmt.Errorf("write producer snapshot at %d: %w", offset, err)
	}
	st, err := producer.LoadSnapshot(path)
	if err != nil {
		l.logger.Warn("dropping unusable producer snapshot from the tier", "offset", offset, "err", err)
		l.removeSnapshot(offset)
		return nil
	}
	l.producers = st
	return nil
}

// truncateFullyLocked implements TruncateFullyAndStartAt. Caller holds mu.
func (l *Log) truncateFullyLocked(offset int64) error {
	l.truncations++
	var errs []error
	for _, s := range l.segs {
		errs = append(errs, s.Delete())
	}
	l.segs = l.segs[:0]
	for _, off := range l.listSnapshots() {
		l.removeSnapshot(off)
	}
	s, err := segment.Create(l.dir, offset, l.segmentOptions())
	if err != nil {
		errs = append(errs, err)
	} else {
		l.segs = append(l.segs, s)
	}
	if err := errors.Join(errs...); err != nil {
		return l.fail(fmt.Errorf("truncate fully to %d: %w", offset, err))
	}
	l.producers = producer.NewState()
	if err := l.epochs.clear(); err != nil {
		return err
	}
	l.leo.Store(offset)
	l.logStart.Store(offset)
	l.recoveryPoint = offset
	l.firstAppendMs = 0
	if err := l.clampCleanerPoint(offset); err != nil {
		return err
	}
	return l.writeCheckpoint()
}
