package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/strata-broker/strata/metadata"
)

// Why a candidacy's session ended, besides Close.
var (
	errSessionExpired = fmt.Errorf("%w: lease expired", metadata.ErrSessionLost)
	errStoreClosed    = fmt.Errorf("%w: store closed", metadata.ErrSessionLost)
	errTermClosed     = fmt.Errorf("memstore: term closed: %w", metadata.ErrClosed)
)

// noController is the controller record while none is elected.
var noController = metadata.ControllerInfo{ID: metadata.NoController}

// election is the controller election of a Backend, guarded by
// Backend.mu.
type election struct {
	cands   []*candidate // live candidacies in campaign order; cands[0] is elected
	epoch   int32        // controller epoch of the last claim
	record  metadata.ControllerInfo
	changed chan struct{} // closed and replaced when record changes
}

// candidate is one Campaign's candidacy and its session.
type candidate struct {
	s       *Store
	id      int32
	elected chan struct{} // closed when it heads the line
	ended   chan struct{} // closed when the session ended
	cause   error         // why; set before ended is closed
	claimed int32         // the epoch it claimed; 0 before the claim
}

// Campaign joins the line of candidates and waits until it heads it,
// then claims the next controller epoch. ttl is accepted and ignored.
func (s *Store) Campaign(ctx context.Context, id int32, _ time.Duration) (metadata.Term, error) {
	op := fmt.Sprintf("campaign for controller as broker %d", id)
	b := s.b
	b.mu.Lock()
	if err := s.checkOpen(op); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	c := &candidate{s: s, id: id, elected: make(chan struct{}), ended: make(chan struct{})}
	s.cands[c] = struct{}{}
	b.ctl.cands = append(b.ctl.cands, c)
	if len(b.ctl.cands) == 1 {
		close(c.elected)
	}
	b.commit() // the campaign key
	b.mu.Unlock()

	select {
	case <-c.elected:
	case <-c.ended:
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if metadata.IsClosed(c.ended) {
		return nil, fmt.Errorf("memstore: %s: %w", op, c.cause)
	}
	if !metadata.IsClosed(c.elected) {
		b.endCandidate(c, ctx.Err())
		return nil, fmt.Errorf("memstore: %s: %w", op, ctx.Err())
	}
	b.ctl.epoch++
	c.claimed = b.ctl.epoch
	b.setController(metadata.ControllerInfo{ID: id, Epoch: c.claimed})
	return &term{c: c, rev: b.commit()}, nil
}

// endCandidate ends c's session: it leaves the line, its record (if it is
// the current one) vanishes, and the next candidate is elected. b.mu must
// be held.
func (b *Backend) endCandidate(c *candidate, cause error) {
	if metadata.IsClosed(c.ended) {
		return
	}
	c.cause = cause
	close(c.ended)
	delete(c.s.cands, c)
	i := slices.Index(b.ctl.cands, c)
	b.ctl.cands = slices.Delete(b.ctl.cands, i, i+1)
	if c.claimed != 0 && b.ctl.record.Epoch == c.claimed {
		b.setController(noController)
	}
	b.commit() // the campaign key and the record go
	if i == 0 && len(b.ctl.cands) > 0 {
		close(b.ctl.cands[0].elected)
	}
}

// setController publishes a new controller record. b.mu must be held.
func (b *Backend) setController(info metadata.ControllerInfo) {
	b.ctl.record = info
	close(b.ctl.changed)
	b.ctl.changed = make(chan struct{})
}

// WatchController follows the controller record with one goroutine that
// ends with ctx or the handle.
func (s *Store) WatchController(ctx context.Context) <-chan metadata.ControllerInfo {
	out := make(chan metadata.ControllerInfo, 1)
	go func() {
		defer close(out)
		b := s.b
		for {
			b.mu.Lock()
			info, changed, closed := b.ctl.record, b.ctl.changed, s.closed
			b.mu.Unlock()
			if closed {
				return
			}
			select { // drop an unread older value; this goroutine is the only sender
			case <-out:
			default:
			}
			out <- info
			select {
			case <-changed:
			case <-ctx.Done():
				return
			case <-s.done:
				return
			}
		}
	}()
	return out
}

// term is the metadata.Term of a claimed candidacy.
type term struct {
	c   *candidate
	rev int64
}

func (t *term) Epoch() int32          { return t.c.claimed }
func (t *term) Revision() int64       { return t.rev }
func (t *term) Done() <-chan struct{} { return t.c.ended }

func (t *term) Err() error {
	if metadata.IsClosed(t.c.ended) {
		return t.c.cause
	}
	return nil
}

// CompareAndSetPartition is the handle's compare-and-set, failing with
// metadata.ErrFenced once the term is over.
func (t *term) CompareAndSetPartition(_ context.Context, topic string, partition, prevPartitionEpoch int32, next metadata.PartitionState) (int64, error) {
	b := t.c.s.b
	return t.c.s.casPartition(func() error {
		if metadata.IsClosed(t.c.ended) {
			return fmt.Errorf("controller epoch %d is over (%v): %w", t.c.claimed, t.c.cause, metadata.ErrFenced)
		}
		if b.ctl.epoch != t.c.claimed {
			return fmt.Errorf("controller epoch %d superseded by %d: %w", t.c.claimed, b.ctl.epoch, metadata.ErrFenced)
		}
		return nil
	}, topic, partition, prevPartitionEpoch, next)
}

// Close ends the term and its candidacy. Idempotent.
func (t *term) Close() error {
	b := t.c.s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endCandidate(t.c, errTermClosed)
	return nil
}
