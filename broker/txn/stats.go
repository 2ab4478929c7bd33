package txn

import (
	"sync/atomic"

	"github.com/strata-broker/strata/broker/coordshard"
)

// Stats are the coordinator's transaction figures, for the broker's
// metrics.
type Stats struct {
	Ongoing   int   // transactional ids with a transaction open or ending
	Committed int64 // transactions completed with CompleteCommit since start
	Aborted   int64 // transactions completed with CompleteAbort since start
	Loads     coordshard.LoadStats
}

// stats counts the completed transactions; atomic, so it needs no lock.
type stats struct {
	committed, aborted atomic.Int64
}

// Stats returns the coordinator's figures now: the open transactions of
// its loaded partitions and the completions counted so far.
func (c *Coordinator) Stats() Stats {
	s := Stats{Committed: c.counts.committed.Load(), Aborted: c.counts.aborted.Load(), Loads: c.Loads()}
	for _, e := range c.loadedEntries() {
		e.mu.Lock()
		if !e.removed && e.md.hasOpenTransaction() {
			s.Ongoing++
		}
		e.mu.Unlock()
	}
	return s
}

// applied logs a transition of e from state from to state to that took
// effect, at debug, counts completed transactions and opens or closes
// e.ended. e.mu is held.
func (c *Coordinator) applied(e *entry, from, to State) {
	md := e.md
	switch to {
	case CompleteCommit:
		c.counts.committed.Add(1)
	case CompleteAbort:
		c.counts.aborted.Add(1)
	}
	switch {
	case to == PrepareCommit || to == PrepareAbort:
		if e.ended == nil {
			e.ended = make(chan struct{})
		}
	case e.ended != nil:
		close(e.ended)
		e.ended = nil
	}
	c.log.Debug("transaction state change", "transactional_id", md.TransactionalID,
		"producer_id", md.ProducerID, "producer_epoch", md.ProducerEpoch,
		"from", from.String(), "to", to.String(), "coordinator_epoch", e.sh.Epoch)
}
