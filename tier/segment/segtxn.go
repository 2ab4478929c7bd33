package segment

import (
	"fmt"

	"github.com/strata-broker/strata/tier/record"
)

// The segment's transaction index: the Segment owns its [TxnIndex] as it
// owns its other indexes, so that creation, deletion, truncation and
// renames keep the .txnindex file with the .log file.

// TxnIndex is the segment's transaction index, for collecting aborted
// transactions (it has its own lock).
func (s *Segment) TxnIndex() *TxnIndex { return s.txn }

// TxnIndexPath is the path of the transaction index file (which exists
// only once the segment holds an aborted transaction).
func (s *Segment) TxnIndexPath() string { return s.path(TxnIndexSuffix) }

// AppendAbortedTxn adds a to the transaction index (see TxnIndex.Append);
// the next Flush makes it durable.
func (s *Segment) AppendAbortedTxn(a AbortedTxn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if err := s.txn.Append(a); err != nil {
		return MarkNoSpace(err)
	}
	s.ixWrites++
	return nil
}

// openTxnIndex loads the transaction index, keeping its valid prefix and
// dropping the entries of markers past the log end (the log lost them).
func (s *Segment) openTxnIndex(suffix string) error {
	x, cut, err := OpenTxnIndex(FileName(s.dir, s.base, TxnIndexSuffix+suffix), s.base)
	if err != nil {
		return err
	}
	if cut > 0 {
		s.log.Warn("transaction index torn, cut to its valid entries", "segment", s.LogPath(), "bytes", cut)
	}
	s.txn = x
	return x.TruncateTo(s.next)
}

// LastOffset is the marker offset of the newest entry, -1 if none.
func (x *TxnIndex) LastOffset() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.lastOffsetLocked()
}

// ReadBatch reads the whole batch that h (from Batches) describes, for a
// caller that needs its records (the partition log reads transaction
// markers when it rebuilds the producer state).
func (s *Segment) ReadBatch(h BatchHeader) (record.Batch, error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	r, err := s.acquireFile()
	s.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	defer r.release()
	b := make(record.Batch, h.Size)
	if _, err := r.f.ReadAt(b, h.Pos); err != nil {
		return nil, fmt.Errorf("read batch at %d of segment %s: %w", h.Pos, s.LogPath(), err)
	}
	return b, nil
}
