package local

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/strata-broker/strata/tier/producer"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// AppendOptions are the leader's parameters for one append.
type AppendOptions struct {
	// LeaderEpoch is stamped into every batch's PartitionLeaderEpoch.
	LeaderEpoch int32
	// LogAppendTime replaces the batches' timestamps with the append time
	// (message.timestamp.type=LogAppendTime).
	LogAppendTime bool
	// Now is the append time in ms; 0 means the current time.
	Now int64
}

// AppendResult reports where an append landed.
type AppendResult struct {
	FirstOffset    int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless LogAppendTime was requested
	LogStartOffset int64
	// Duplicate: the batch was a retry of one already in the log; nothing
	// was appended and the offsets are those of the original.
	Duplicate bool
}

// AppendAsLeader assigns offsets from the log end to the batches (and the
// leader epoch, and the append time when asked), checks them against the
// idempotent-producer state and appends them. Validation (framing, CRC,
// producer sequence and epoch) is all-or-nothing: an error appends
// nothing. A retried batch is answered with Duplicate and its original
// offsets. Producer errors wrap producer.ErrOutOfOrderSequence or
// producer.ErrInvalidProducerEpoch; framing errors record.ErrCorrupt.
func (l *Log) AppendAsLeader(batches []record.Batch, o AppendOptions) (AppendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return AppendResult{}, err
	}
	now := time.Now().UnixMilli()
	appendTime := int64(-1)
	if o.LogAppendTime {
		appendTime = o.Now
		if appendTime == 0 {
			appendTime = now
		}
	}
	res := AppendResult{FirstOffset: l.leo.Load(), LastOffset: l.leo.Load() - 1,
		LogAppendTime: appendTime, LogStartOffset: l.logStart.Load()}
	// Check every batch first (all-or-nothing), staging the producer
	// updates so batches of one producer are checked against each other.
	pending := l.producers.Begin()
	metas := make([]*producer.BatchMeta, len(batches))
	next := res.FirstOffset
	for i, b := range batches {
		if err := checkBatch(b); err != nil {
			return AppendResult{}, fmt.Errorf("append batch %d: %w", i, err)
		}
		count := int64(b.LastOffsetDelta()) + 1
		if b.ProducerID() >= 0 && !b.IsControl() {
			m := headerMeta(segment.ParseHeader(b))
			m.FirstOffset, m.LastOffset = next, next+count-1
			if o.LogAppendTime {
				m.MaxTimestamp = appendTime
			}
			dup, err := pending.Check(m)
			if err != nil {
				return AppendResult{}, fmt.Errorf("append batch %d: %w", i, err)
			}
			if dup != nil {
				res.FirstOffset, res.LastOffset, res.Duplicate = dup.FirstOffset, dup.LastOffset, true
				if o.LogAppendTime {
					res.LogAppendTime = dup.MaxTimestamp
				}
				return res, nil
			}
			pending.Update(m)
			metas[i] = &m
		}
		next += count
	}
	if err := l.checkSpace(batches); err != nil {
		return AppendResult{}, err
	}
	// The state itself is updated batch by batch, so that a roll in the
	// middle of the append snapshots exactly the batches below it.
	for i, b := range batches {
		b.SetBaseOffset(l.leo.Load())
		b.SetPartitionLeaderEpoch(o.LeaderEpoch)
		if o.LogAppendTime {
			b.SetLogAppendTime(appendTime)
		}
		if err := l.appendLocked(b, now, l.cfg.PageCacheWindow); err != nil {
			return AppendResult{}, err
		}
		if metas[i] != nil {
			l.producers.Update(*metas[i])
		}
	}
	res.LastOffset = l.leo.Load() - 1
	return res, l.maybeFlush(now)
}

// AppendAsFollower appends batches copied from the leader, keeping their
// offsets, epochs and timestamps; the producer state follows them without
// checks, and so do the transactions: a marker (control batch) ends its
// producer's transaction and indexes it when it aborted. The first batch
// must start at or after the log end and each batch after the previous one
// (ErrUnexpectedOffset otherwise); nothing is appended when any batch is
// invalid, a marker that does not parse included.
func (l *Log) AppendAsFollower(batches []record.Batch) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	next := l.leo.Load()
	markers := make([]*producer.MarkerMeta, len(batches))
	for i, b := range batches {
		if err := checkBatch(b); err != nil {
			return fmt.Errorf("append batch %d as follower: %w", i, err)
		}
		if b.IsControl() {
			m, ok, err := markerMeta(b)
			if err != nil {
				return fmt.Errorf("append batch %d as follower: %w", i, err)
			}
			if ok {
				markers[i] = &m
			}
		}
		if b.BaseOffset() < next {
			return fmt.Errorf("append batch %d as follower: base offset %d below %d: %w", i, b.BaseOffset(), next, ErrUnexpectedOffset)
		}
		next = b.LastOffset() + 1
	}
	if err := l.checkSpace(batches); err != nil {
		return err
	}
	now := time.Now().UnixMilli()
	for i, b := range batches {
		if err := l.appendLocked(b, now, l.cfg.FollowerPageCacheWindow); err != nil {
			return err
		}
		if b.ProducerID() >= 0 && !b.IsControl() {
			l.producers.Update(headerMeta(segment.ParseHeader(b)))
		}
		if markers[i] != nil {
			if err := l.applyMarker(l.producers, l.active(), *markers[i]); err != nil {
				return err
			}
		}
	}
	return l.maybeFlush(now)
}

// checkSpace asks Config.SpaceCheck whether the batches may be written.
// Caller holds mu.
func (l *Log) checkSpace(batches []record.Batch) error {
	if l.cfg.SpaceCheck == nil {
		return nil
	}
	var n int64
	for _, b := range batches {
		n += int64(len(b))
	}
	if err := l.cfg.SpaceCheck(n); err != nil {
		return fmt.Errorf("local: log %s: %w: %w: %w", l.dir, ErrStorage, segment.ErrNoSpace, err)
	}
	return nil
}

// checkBatch verifies what the log relies on: one whole v2 batch with a
// good CRC (so recovery will keep it) and a sane offset range.
func checkBatch(b record.Batch) error {
	if n, count := record.ValidPrefix(b); n != len(b) || count != 1 {
		return fmt.Errorf("not one intact v2 batch: %w", record.ErrCorrupt)
	}
	if b.LastOffsetDelta() < 0 {
		return fmt.Errorf("negative last offset delta %d: %w", b.LastOffsetDelta(), record.ErrInvalidRecord)
	}
	return nil
}

// appendLocked rolls if needed and writes one batch to the active segment,
// keeping window bytes of it in the page cache (leaders and followers
// differ: Config). The batch's leader epoch is recorded first, as Kafka's
// UnifiedLog does, so that no step can fail after the batch is in. A
// write error fails the log, unless it was for lack of space
// (writeFailed). Caller holds mu.
func (l *Log) appendLocked(b record.Batch, nowMs, window int64) error {
	if err := l.maybeRoll(b, nowMs); err != nil {
		return l.writeFailed(err)
	}
	if err := l.epochs.assign(b.PartitionLeaderEpoch(), b.BaseOffset()); err != nil {
		// The entry is kept in memory and written with the next
		// checkpoint; recovery re-derives it from the batches anyway.
		return l.writeFailed(segment.MarkNoSpace(err))
	}
	l.active().SetCacheWindow(window)
	if err := l.active().Append(b); err != nil {
		return l.writeFailed(err)
	}
	if l.firstAppendMs == 0 {
		l.firstAppendMs = nowMs
	}
	l.leo.Store(b.LastOffset() + 1)
	return nil
}

// writeFailed wraps the error of a failed append with ErrStorage. A write
// that failed for lack of space (segment.ErrNoSpace) left the log as it
// was: the segment cut the partial batch off, a failed roll undid itself.
// The log then stays usable and the next append tries again, so appends
// resume once space is freed, while reads go on meanwhile. Any other
// failure fails the log (fail). Caller holds mu.
func (l *Log) writeFailed(err error) error {
	if errors.Is(err, segment.ErrNoSpace) {
		return fmt.Errorf("local: log %s: %w: %w", l.dir, ErrStorage, err)
	}
	return l.fail(err)
}

// fail makes err the log's sticky failure, wrapped with ErrStorage: after
// a failed write, sync or truncation the files may not hold what the log
// believes (the kernel may have dropped dirty pages), so every later
// write returns it until the log is reopened and recovered. Caller holds
// mu.
func (l *Log) fail(err error) error {
	l.failed = fmt.Errorf("local: log %s failed: %w: %w", l.dir, ErrStorage, err)
	return l.failed
}

// maybeRoll starts a new segment at the batch's base offset when the
// active one would grow past SegmentBytes, is older than SegmentMs, or
// cannot index the batch's offsets. An empty active segment is never
// rolled for size or age. Caller holds mu.
func (l *Log) maybeRoll(b record.Batch, nowMs int64) error {
	active := l.active()
	size := active.Size()
	switch {
	case b.LastOffset()-active.BaseOffset() > math.MaxUint32:
	case size > 0 && size+int64(len(b)) > l.cfg.SegmentBytes:
	case size > 0 && l.firstAppendMs != 0 && nowMs-l.firstAppendMs > l.cfg.SegmentMs:
	default:
		return nil
	}
	return l.roll(b.BaseOffset(), nowMs)
}

// roll seals the active segment and starts one at base (an empty active
// segment is replaced instead), snapshots the producer state at base and
// asks the flusher to make the sealed segment durable. The new segment is
// created before the old one is sealed or removed, so a roll that fails
// for lack of space leaves the segments as they were. Caller holds mu.
func (l *Log) roll(base, nowMs int64) error {
	old := l.active()
	if old.Size() == 0 && old.BaseOffset() == base {
		return nil
	}
	s, err := segment.Create(l.dir, base, l.segmentOptions())
	if err != nil {
		return err
	}
	if old.Size() == 0 {
		if err := old.Delete(); err != nil {
			return errors.Join(err, s.Delete())
		}
		l.segs = l.segs[:len(l.segs)-1]
	} else if err := old.Seal(); err != nil {
		if derr := s.Delete(); derr != nil {
			return errors.Join(err, derr)
		}
		return err
	}
	l.segs = append(l.segs, s)
	l.firstAppendMs = 0
	l.expireProducers(nowMs)
	if err := l.takeSnapshot(base); err != nil {
		// The snapshot only shortens the next recovery; keep going.
		l.logger.Warn("cannot snapshot producer state at roll", "offset", base, "err", err)
	}
	l.rollTarget = base
	select {
	case l.flushReq <- struct{}{}:
	default:
	}
	l.logger.Debug("rolled segment", "base", base)
	return nil
}

// maybeFlush applies the flush policy after an append. Caller holds mu.
func (l *Log) maybeFlush(nowMs int64) error {
	if l.leo.Load()-l.recoveryPoint >= l.cfg.FlushIntervalMessages ||
		nowMs-l.lastFlushMs >= l.cfg.FlushIntervalMs {
		return l.flushLocked()
	}
	return nil
}

// flushLocked fdatasyncs the segments that may hold unflushed data and
// advances the recovery point to the log end. A failed sync fails the log:
// the kernel may have dropped the dirty pages. Caller holds mu.
func (l *Log) flushLocked() error {
	for _, s := range l.segs {
		if s.NextOffset() <= l.recoveryPoint && s != l.active() {
			continue
		}
		if err := s.Flush(); err != nil {
			return l.fail(err)
		}
	}
	if err := segment.SyncDir(l.dir); err != nil {
		return l.fail(err)
	}
	l.recoveryPoint = l.leo.Load()
	l.lastFlushMs = time.Now().UnixMilli()
	return l.writeCheckpoint()
}

// rollFlusher makes rolled segments durable off the append path (Kafka
// flushes a rolled segment asynchronously too) and then advances the
// recovery point to the new segment's base.
func (l *Log) rollFlusher() {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		case <-l.flushReq:
		}
		if err := l.flushRolled(); err != nil {
			l.logger.Warn("cannot flush rolled segments", "err", err)
		}
	}
}

// flushRolled flushes the sealed segments below the roll target without
// holding mu during the syncs.
func (l *Log) flushRolled() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	target, gen := l.rollTarget, l.truncations
	var segs []*segment.Segment
	for _, s := range l.segs {
		if s.BaseOffset() < target && s.NextOffset() > l.recoveryPoint {
			segs = append(segs, s)
		}
	}
	l.mu.Unlock()
	var err error
	for _, s := range segs {
		if err = s.Flush(); err != nil {
			break
		}
	}
	if err == nil {
		err = segment.SyncDir(l.dir)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if errors.Is(err, segment.ErrClosed) {
		return nil // deleted or truncated away meanwhile
	}
	if err != nil {
		if !l.closed {
			return l.fail(err)
		}
		return err
	}
	if l.closed || gen != l.truncations || target <= l.recoveryPoint {
		return nil
	}
	l.recoveryPoint = target
	return l.writeCheckpoint()
}
