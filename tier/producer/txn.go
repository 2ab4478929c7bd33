package producer

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/strata-broker/strata/tier/segment"
)

// Sentinel errors of transactional appends, wrapped with the details.
var (
	// ErrInvalidTxnState: a non-transactional batch from a producer whose
	// transaction is still open (Kafka's INVALID_TXN_STATE).
	ErrInvalidTxnState = errors.New("producer: invalid transaction state")
	// ErrTransactionCoordinatorFenced: a marker from an older coordinator
	// epoch than the producer's last marker (Kafka's
	// TRANSACTION_COORDINATOR_FENCED).
	ErrTransactionCoordinatorFenced = errors.New("producer: transaction coordinator fenced")
)

// txnSpan is one transaction of the state's ongoing or unreplicated list.
// last is the offset of its marker, set once it completed.
type txnSpan struct {
	pid         int64
	first, last int64
}

// insertSpan adds t to spans, kept sorted by first offset.
func insertSpan(spans []txnSpan, t txnSpan) []txnSpan {
	i, _ := slices.BinarySearchFunc(spans, t.first, func(x txnSpan, first int64) int { return cmp.Compare(x.first, first) })
	return slices.Insert(spans, i, t)
}

// removeSpan removes the span starting at first from spans, if present.
func removeSpan(spans []txnSpan, first int64) []txnSpan {
	i, ok := slices.BinarySearchFunc(spans, first, func(x txnSpan, first int64) int { return cmp.Compare(x.first, first) })
	if !ok {
		return spans
	}
	return slices.Delete(spans, i, i+1)
}

// checkTxn rejects a non-transactional batch while the producer's
// transaction is open.
func checkTxn(e *entry, m BatchMeta) error {
	if e.txnFirst != noTxn && !m.Transactional {
		return fmt.Errorf("producer %d: non-transactional batch at epoch %d while its transaction from offset %d is open: %w",
			m.ProducerID, m.Epoch, e.txnFirst, ErrInvalidTxnState)
	}
	return nil
}

// startTxn records that producer pid's transaction opened at first.
func (s *State) startTxn(pid, first int64) {
	s.ongoing = insertSpan(s.ongoing, txnSpan{pid: pid, first: first, last: -1})
}

// MarkerMeta describes a control batch (a COMMIT or ABORT marker) of a
// producer, written at Offset by the transaction coordinator of epoch
// CoordinatorEpoch.
type MarkerMeta struct {
	ProducerID       int64
	Epoch            int16
	CoordinatorEpoch int32
	Commit           bool
	Offset           int64
	Timestamp        int64
}

// CompletedTxn is a transaction that a marker ended: producer ProducerID's
// records from FirstOffset up to the marker at LastOffset. LastStableOffset
// is the partition's last stable offset right after the marker, as Kafka
// computes it for the transaction index: the first offset of the oldest
// transaction of another producer still open, else LastOffset+1.
type CompletedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
	Aborted          bool
}

// AbortedTxn is the transaction index entry of an aborted transaction.
func (c CompletedTxn) AbortedTxn() segment.AbortedTxn {
	return segment.AbortedTxn{
		ProducerID:       c.ProducerID,
		FirstOffset:      c.FirstOffset,
		LastOffset:       c.LastOffset,
		LastStableOffset: c.LastStableOffset,
	}
}

// CheckMarker classifies a marker about to be appended as leader: an
// older producer epoch than the producer's wraps ErrInvalidProducerEpoch,
// an older coordinator epoch than its last marker's
// ErrTransactionCoordinatorFenced. A marker for an unknown producer is
// accepted. CheckMarker does not change the state.
func (s *State) CheckMarker(m MarkerMeta) error {
	e := s.producers[m.ProducerID]
	if e == nil {
		return nil
	}
	if m.Epoch < e.epoch {
		return fmt.Errorf("producer %d: marker epoch %d is older than current epoch %d: %w",
			m.ProducerID, m.Epoch, e.epoch, ErrInvalidProducerEpoch)
	}
	if m.CoordinatorEpoch < e.coordEpoch {
		return fmt.Errorf("producer %d: marker coordinator epoch %d is older than %d: %w",
			m.ProducerID, m.CoordinatorEpoch, e.coordEpoch, ErrTransactionCoordinatorFenced)
	}
	return nil
}

// ApplyMarker records a marker that was appended (as leader after
// CheckMarker, or as follower or during recovery without it). It ends the
// producer's open transaction and returns it, with the LSO computed before
// the transaction left the open list; the log appends
// CompletedTxn.AbortedTxn to the segment's transaction index when it was
// aborted. The result is nil when the producer had no open transaction (a
// marker of an empty transaction, which changes neither the LSO nor the
// index). The completed transaction keeps holding the LSO back until the
// high watermark passes its marker (LastStableOffset).
func (s *State) ApplyMarker(m MarkerMeta) *CompletedTxn {
	e := s.producers[m.ProducerID]
	if m.ProducerID < 0 || e == nil {
		// Unknown producer: it has no open transaction here.
		return nil
	}
	e.setEpoch(m.Epoch)
	e.coordEpoch = m.CoordinatorEpoch
	e.lastTs = m.Timestamp
	if e.txnFirst == noTxn {
		return nil
	}
	c := &CompletedTxn{
		ProducerID:  m.ProducerID,
		FirstOffset: e.txnFirst,
		LastOffset:  m.Offset,
		Aborted:     !m.Commit,
	}
	c.LastStableOffset = m.Offset + 1
	for _, t := range s.ongoing {
		if t.pid != m.ProducerID {
			c.LastStableOffset = t.first
			break
		}
	}
	s.ongoing = removeSpan(s.ongoing, e.txnFirst)
	s.unreplicated = insertSpan(s.unreplicated, txnSpan{pid: m.ProducerID, first: e.txnFirst, last: m.Offset})
	e.txnFirst = noTxn
	return c
}

// FirstUnstableOffset is the first offset of the oldest transaction that
// is open, or completed with its marker possibly above the high watermark
// (Kafka's firstUnstableOffset); ok is false when there is none.
func (s *State) FirstUnstableOffset() (offset int64, ok bool) { return s.FirstUnstableOffsetAt(-1) }

// FirstUnstableOffsetAt is FirstUnstableOffset for high watermark hw: a
// completed transaction whose marker is below hw no longer counts
// (whether or not OnHighWatermarkUpdated has dropped it yet).
func (s *State) FirstUnstableOffsetAt(hw int64) (offset int64, ok bool) {
	offset, ok = -1, false
	if len(s.ongoing) > 0 {
		offset, ok = s.ongoing[0].first, true
	}
	for _, t := range s.unreplicated {
		if t.last >= hw {
			if !ok || t.first < offset {
				offset, ok = t.first, true
			}
			break // sorted by first offset: later ones start later
		}
	}
	return offset, ok
}

// LastStableOffset is the partition's LSO for high watermark hw:
// min(first unstable offset, hw), where a completed transaction whose
// marker is below hw no longer counts (whether or not
// OnHighWatermarkUpdated has dropped it yet).
func (s *State) LastStableOffset(hw int64) int64 {
	lso := hw
	if len(s.ongoing) > 0 {
		lso = min(lso, s.ongoing[0].first)
	}
	for _, t := range s.unreplicated {
		if t.last >= hw {
			lso = min(lso, t.first)
			break // sorted by first offset: later ones start later
		}
	}
	return lso
}

// OnHighWatermarkUpdated forgets the completed transactions whose marker
// is below hw: they are replicated and no longer hold the LSO back.
func (s *State) OnHighWatermarkUpdated(hw int64) {
	s.unreplicated = slices.DeleteFunc(s.unreplicated, func(t txnSpan) bool { return t.last < hw })
}

// OngoingTxn returns the first offset of producer pid's open transaction.
func (s *State) OngoingTxn(pid int64) (first int64, ok bool) {
	if e := s.producers[pid]; e != nil && e.txnFirst != noTxn {
		return e.txnFirst, true
	}
	return -1, false
}

// OngoingTxns is the number of open transactions.
func (s *State) OngoingTxns() int { return len(s.ongoing) }
