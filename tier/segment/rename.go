package segment

import (
	"errors"
	"fmt"
	"os"
)

// FileSuffix is the extra suffix the segment's file names carry now (""
// for a live segment); see Options.FileSuffix.
func (s *Segment) FileSuffix() string { return *s.suffix.Load() }

// RenameSuffix renames the segment's files from their current extra
// suffix to suffix, while they stay open: the transaction index (if any)
// and the offset index first, then the time index, then the .log file, so that a crash leaves the .log under
// its old name until both indexes were renamed (the partition log's swap
// recovery relies on this order). On failure the files already renamed
// are moved back where possible and the error is returned. The caller
// syncs the directory.
func (s *Segment) RenameSuffix(suffix string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("rename segment %d: %w", s.base, ErrClosed)
	}
	from := *s.suffix.Load()
	if from == suffix {
		return nil
	}
	if err := s.txn.Rename(FileName(s.dir, s.base, TxnIndexSuffix+suffix)); err != nil {
		return fmt.Errorf("rename segment %d from %q to %q: %w", s.base, from, suffix, err)
	}
	kinds := []string{IndexSuffix, TimeIndexSuffix, LogSuffix}
	for i, kind := range kinds {
		err := os.Rename(FileName(s.dir, s.base, kind+from), FileName(s.dir, s.base, kind+suffix))
		if err == nil {
			continue
		}
		for _, done := range kinds[:i] {
			err = errors.Join(err, os.Rename(FileName(s.dir, s.base, done+suffix), FileName(s.dir, s.base, done+from)))
		}
		err = errors.Join(err, s.txn.Rename(FileName(s.dir, s.base, TxnIndexSuffix+from)))
		return fmt.Errorf("rename segment %d from %q to %q: %w", s.base, from, suffix, err)
	}
	s.suffix.Store(&suffix)
	s.ix.rename(s.dir, s.base, suffix)
	return nil
}
