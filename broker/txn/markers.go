package txn

import (
	"context"
	"time"
)

// Markers is the work of ending one transaction: a COMMIT or ABORT
// control record for each of its partitions, written by the partitions'
// leaders (WriteTxnMarkers).
type Markers struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool
	// CoordinatorEpoch fences markers of a coordinator that lost its
	// partition: the leaders refuse markers of an older epoch.
	CoordinatorEpoch int32
	Partitions       []TopicPartition
}

// MarkerWriter writes a transaction's markers. WriteMarkers must not
// block: it calls done once every partition has its marker (or no longer
// exists), from any goroutine; the coordinator then logs the
// transaction's Complete* state. A coordinator that resigned the
// partition meanwhile ignores done: its successor writes the markers
// again after loading.
type MarkerWriter interface {
	WriteMarkers(m Markers, done func())
}

// noMarkers is the MarkerWriter of a coordinator given none: every
// transaction's markers count as written at once.
type noMarkers struct{}

func (noMarkers) WriteMarkers(_ Markers, done func()) { go done() }

// markersOf is the marker work of e's ending transaction. e.mu is held.
func markersOf(e *entry) Markers {
	md := e.md
	return Markers{
		TransactionalID: md.TransactionalID, ProducerID: md.ProducerID, ProducerEpoch: md.ProducerEpoch,
		Commit: md.State == PrepareCommit, CoordinatorEpoch: e.sh.Epoch, Partitions: md.Partitions.Sorted(),
	}
}

// sendMarkers hands e's ending transaction (PrepareCommit or
// PrepareAbort, logged) to the marker writer. e.mu is held.
func (c *Coordinator) sendMarkers(e *entry) {
	m := markersOf(e)
	c.markers.WriteMarkers(m, func() { c.completeEnd(e, m) })
}

// completeEnd logs the Complete* state of e's transaction once its
// markers are written, retrying a failed write until it succeeds or the
// shard is resigned (its successor completes the transaction after
// loading).
func (c *Coordinator) completeEnd(e *entry, m Markers) {
	for {
		retry, err := c.tryComplete(e, m)
		if !retry {
			if err != nil {
				c.log.Info("transaction not completed", "transactional_id", m.TransactionalID, "err", err)
			}
			return
		}
		c.log.Warn("log transaction completion", "transactional_id", m.TransactionalID, "err", err)
		select {
		case <-e.sh.Stop():
			return
		case <-time.After(c.cfg.retryWait()):
		}
	}
}

// tryComplete writes e's completion once; retry reports a write that
// may succeed if tried again.
func (c *Coordinator) tryComplete(e *entry, m Markers) (retry bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	md := e.md
	if e.removed || md.ProducerID != m.ProducerID || md.ProducerEpoch != m.ProducerEpoch ||
		(md.State != PrepareCommit && md.State != PrepareAbort) || m.CoordinatorEpoch != e.sh.Epoch {
		return false, nil // resigned, or completed already
	}
	tx, err := md.PrepareComplete(time.Now())
	if err != nil {
		return false, err
	}
	err = c.write(e, tx, false, time.Now())
	return err != nil && c.current(e.sh) == nil, err
}

func (cfg Config) retryWait() time.Duration {
	if cfg.MarkerRetryWait > 0 {
		return cfg.MarkerRetryWait
	}
	return defaultRetryWait
}

// AwaitEnded waits, for at most d, until the commit or abort of id's
// transaction that this coordinator is completing ends (its markers
// written and its completion logged). It reports false at once when id
// has no such transaction here, so that a caller retrying a request that
// met CONCURRENT_TRANSACTIONS knows to back off instead.
func (c *Coordinator) AwaitEnded(ctx context.Context, id string, d time.Duration) bool {
	var ch chan struct{}
	_ = c.withTxn(id, nil, ErrTransactionalIDNotFound, func(e *entry) error {
		ch = e.ended
		return nil
	})
	if ch == nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
	return true
}
