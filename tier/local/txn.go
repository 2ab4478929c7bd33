package local

import (
	"fmt"
	"iter"
	"time"

	"github.com/strata-broker/strata/tier/producer"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// TxnMarker is a transaction marker the coordinator asks a partition
// leader to write (WriteTxnMarkers): producer ProducerID's transaction,
// at ProducerEpoch, ends with COMMIT (Commit) or ABORT, written for the
// coordinator of CoordinatorEpoch.
type TxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	Commit           bool
}

// AppendMarker appends the marker's control batch as leader at leader
// epoch leaderEpoch and returns its offset. The producer state checks it
// first: an older producer epoch wraps producer.ErrInvalidProducerEpoch,
// an older coordinator epoch producer.ErrTransactionCoordinatorFenced, and
// nothing is appended. The marker then ends the producer's transaction,
// and an ABORT of a non-empty one adds its entry to the active segment's
// transaction index.
func (l *Log) AppendMarker(m TxnMarker, leaderEpoch int32) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return -1, err
	}
	now := time.Now().UnixMilli()
	meta := producer.MarkerMeta{ProducerID: m.ProducerID, Epoch: m.ProducerEpoch,
		CoordinatorEpoch: m.CoordinatorEpoch, Commit: m.Commit, Offset: l.leo.Load(), Timestamp: now}
	if err := l.producers.CheckMarker(meta); err != nil {
		return -1, fmt.Errorf("append transaction marker: %w", err)
	}
	b, err := record.BuildEndTxnMarker(record.BuildOptions{
		BaseOffset: meta.Offset, PartitionLeaderEpoch: leaderEpoch, FirstTimestamp: now,
		ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch,
	}, record.EndTxnMarker{Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch})
	if err != nil {
		return -1, err
	}
	if err := l.checkSpace([]record.Batch{b}); err != nil {
		return -1, err
	}
	if err := l.appendLocked(b, now, l.cfg.PageCacheWindow); err != nil {
		return -1, err
	}
	if err := l.applyMarker(l.producers, l.active(), meta); err != nil {
		return -1, err
	}
	return meta.Offset, l.maybeFlush(now)
}

// markerMeta parses the marker of control batch b; ok is false for a
// batch without a producer or without a marker record (the cleaner
// removed it).
func markerMeta(b record.Batch) (m producer.MarkerMeta, ok bool, err error) {
	if b.ProducerID() < 0 {
		return m, false, nil
	}
	em, ok, err := b.EndTxnMarker()
	if err != nil || !ok {
		return m, false, err
	}
	return producer.MarkerMeta{ProducerID: b.ProducerID(), Epoch: b.ProducerEpoch(),
		CoordinatorEpoch: em.CoordinatorEpoch, Commit: em.Commit,
		Offset: b.BaseOffset(), Timestamp: b.MaxTimestamp()}, true, nil
}

// applyMarker records the marker m, stored in segment s, in state, and
// the transaction it aborted, if any, in s's transaction index unless the
// index already holds it (a replay over a segment whose index was kept).
// A failed index write fails the log. Caller holds mu.
func (l *Log) applyMarker(state *producer.State, s *segment.Segment, m producer.MarkerMeta) error {
	state.OnHighWatermarkUpdated(l.hw.Load())
	c := state.ApplyMarker(m)
	if c == nil || !c.Aborted || s.TxnIndex().LastOffset() >= c.LastOffset {
		return nil
	}
	if err := s.AppendAbortedTxn(c.AbortedTxn()); err != nil {
		return l.fail(fmt.Errorf("index aborted transaction of producer %d at %d: %w", c.ProducerID, c.LastOffset, err))
	}
	return nil
}

// replayMarker applies the marker of the control batch h of segment s to
// state during a replay. Caller holds mu.
func (l *Log) replayMarker(state *producer.State, s *segment.Segment, h segment.BatchHeader) error {
	b, err := s.ReadBatch(h)
	if err != nil {
		return err
	}
	m, ok, err := markerMeta(b)
	if err != nil {
		return fmt.Errorf("transaction marker at %d: %w", h.BaseOffset, err)
	}
	if !ok {
		return nil
	}
	return l.applyMarker(state, s, m)
}

// LastStableOffset is the log's last stable offset for high watermark hw:
// the first offset of the oldest transaction still open or whose marker
// is not yet below hw, else hw. read_committed fetches stop there.
func (l *Log) LastStableOffset(hw int64) int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.producers.LastStableOffset(hw)
}

// FirstUnstableOffset is the first offset of the oldest transaction that
// is open or completed with its marker possibly above the high watermark;
// ok is false when there is none.
func (l *Log) FirstUnstableOffset() (offset int64, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.producers.FirstUnstableOffsetAt(l.hw.Load())
}

// OnHighWatermarkUpdated tells the log the partition's high watermark
// moved to hw. It takes no lock, as the partition calls it whenever its
// high watermark moves: the transactions completed below it are dropped
// from the producer state at the next marker, which holds mu anyway
// (LastStableOffset already ignores them).
func (l *Log) OnHighWatermarkUpdated(hw int64) { l.hw.Store(hw) }

// CollectAbortedTxns returns the aborted transactions overlapping the
// offsets [from, upTo), from the transaction indexes of the segment
// holding from and the segments after it (see
// segment.CollectAbortedTxns). Complete is false when the local segments
// ran out before the search ended.
func (l *Log) CollectAbortedTxns(from, upTo int64) segment.TxnIndexSearchResult {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.segs) == 0 {
		return segment.TxnIndexSearchResult{}
	}
	segs := l.segs[l.segmentFor(from):]
	indexes := func(yield func(*segment.TxnIndex) bool) {
		for _, s := range segs {
			if !yield(s.TxnIndex()) {
				return
			}
		}
	}
	return segment.CollectAbortedTxns(iter.Seq[*segment.TxnIndex](indexes), from, upTo)
}

// TxnIndexEntries returns the transaction index entries of the segment
// info (from Segments) describes, for the log cleaner.
func (l *Log) TxnIndexEntries(info SegmentInfo) []segment.AbortedTxn {
	if info.seg == nil {
		return nil
	}
	return info.seg.TxnIndex().All()
}

// carryTxnIndex copies the transaction index entries of the segments old
// into cleaned, which replaces them, and syncs them: the cleaner keeps
// aborted records, so their entries are still needed. A cleaned segment
// whose index the cleaner already wrote is left alone. Caller holds mu.
func carryTxnIndex(old []*segment.Segment, cleaned *segment.Segment) error {
	if cleaned.TxnIndex().Len() > 0 {
		return nil
	}
	for _, s := range old {
		for _, a := range s.TxnIndex().All() {
			if err := cleaned.AppendAbortedTxn(a); err != nil {
				return err
			}
		}
	}
	return cleaned.TxnIndex().Sync()
}

// Producers returns the partition's producers and their state, for
// DescribeProducers.
func (l *Log) Producers() []producer.Active {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.producers == nil {
		return nil
	}
	return l.producers.Producers()
}
