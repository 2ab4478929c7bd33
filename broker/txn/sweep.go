package txn

import (
	"context"
	"time"

	"github.com/strata-broker/strata/broker/coordshard"
)

// Sweep runs the coordinator's two periodic jobs until ctx is done, as
// Kafka's TransactionCoordinator schedules them: every
// transaction.abort.timed.out.transaction.cleanup.interval.ms it aborts
// the transactions open for longer than their timeout (AbortTimedOut),
// and every ExpiryInterval it removes the transactional ids idle for
// transactional.id.expiration.ms (ExpireIDs).
func (c *Coordinator) Sweep(ctx context.Context) {
	abort := time.NewTicker(positive(c.cfg.AbortInterval, 10*time.Second))
	defer abort.Stop()
	expire := time.NewTicker(positive(c.cfg.ExpiryInterval, defaultExpiryInterval))
	defer expire.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-abort.C:
			if n := c.AbortTimedOut(ctx); n > 0 {
				c.log.Info("aborted timed-out transactions", "transactions", n)
			}
		case <-expire.C:
			if n := c.ExpireIDs(); n > 0 {
				c.log.Info("expired transactional ids", "transactional_ids", n)
			}
		}
	}
}

func positive(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// entries returns the ids of every loaded shard, and whether a led shard
// is still loading.
func (c *Coordinator) entries() ([]*entry, bool) {
	return coordshard.Collect(c.Table, func(sh *shard) map[string]*entry { return sh.txns })
}

// loadedEntries returns the ids of every loaded shard.
func (c *Coordinator) loadedEntries() []*entry {
	out, _ := c.entries()
	return out
}

// AbortTimedOut aborts every transaction open for longer than its
// timeout, as Kafka's abortTimedOutTransactions: the producer's epoch is
// bumped (fencing it), the abort logged and its markers written. It
// returns how many transactions it aborted.
func (c *Coordinator) AbortTimedOut(ctx context.Context) int {
	newID := func() (int64, error) { return c.pids.Next(ctx) }
	n := 0
	for _, e := range c.loadedEntries() {
		e.mu.Lock()
		now := time.Now()
		if !e.removed && e.md.TimedOut(now) {
			fence, err := e.md.PrepareFenceProducerEpoch()
			if err == nil {
				err = c.fenceAndAbort(e, fence.ProducerEpoch, newID, now)
			}
			if err != nil {
				c.log.Warn("abort timed-out transaction", "transactional_id", e.md.TransactionalID, "err", err)
			} else {
				n++
			}
		}
		e.mu.Unlock()
	}
	return n
}

// ExpireIDs removes the transactional ids with no transaction open and
// no update for transactional.id.expiration.ms: each gets a tombstone
// and is forgotten once it is written. It returns how many it removed.
func (c *Coordinator) ExpireIDs() int {
	n := 0
	for _, e := range c.loadedEntries() {
		e.mu.Lock()
		now := time.Now()
		if !e.removed && e.md.Expired(now, c.cfg.IDExpiration) {
			if err := c.expire(e, now); err != nil {
				c.log.Warn("expire transactional id", "transactional_id", e.md.TransactionalID, "err", err)
			} else {
				n++
			}
		}
		e.mu.Unlock()
	}
	return n
}

// expire writes e's tombstone and forgets it. e.mu is held.
func (c *Coordinator) expire(e *entry, now time.Time) error {
	tx, err := e.md.PrepareDead()
	if err != nil {
		return err
	}
	err = c.append(e, tx, now)
	if err == nil {
		err = c.current(e.sh)
	}
	if err != nil {
		e.md.CancelTransition()
		return err
	}
	c.forget(e)
	c.applied(e, e.md.State, Dead)
	return nil
}
