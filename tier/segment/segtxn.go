package segment

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
