package compaction

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// txnTracker follows the transactions of the batches a pass reads, in
// offset order, as Kafka's CleanedTransactionMetadata: it says which
// transactional batch belongs to an aborted transaction (its records go)
// and which marker no longer has any batch of its transaction in the log
// (it may go once its delete horizon passed). The aborted transactions
// come from the log's transaction indexes (add); a transaction is open,
// for the tracker, from the first offset its index entry names to its
// marker. Everything it decides is conservative: a marker stays while
// any batch of its transaction was seen in the pass, so a marker never
// goes before the data it ends.
type txnTracker struct {
	// pending are the aborted transactions not yet reached, by first
	// offset; known dedups them by marker offset.
	pending []segment.AbortedTxn
	known   map[int64]bool
	// aborted are the aborted transactions reached and not yet ended, by
	// producer; committed the producers with a batch of a transaction
	// that is not aborted seen since their last marker.
	aborted   map[int64]*abortedRun
	committed map[int64]bool
}

// abortedRun is an aborted transaction the scan is inside of.
type abortedRun struct {
	txn      segment.AbortedTxn
	observed bool // a batch of it was seen
}

func newTxnTracker() *txnTracker {
	return &txnTracker{known: map[int64]bool{}, aborted: map[int64]*abortedRun{}, committed: map[int64]bool{}}
}

// add tells the tracker of aborted transactions, skipping those already
// added.
func (t *txnTracker) add(as []segment.AbortedTxn) {
	n := len(t.pending)
	for _, a := range as {
		if !t.known[a.LastOffset] {
			t.known[a.LastOffset] = true
			t.pending = append(t.pending, a)
		}
	}
	if len(t.pending) > n {
		slices.SortFunc(t.pending, func(a, b segment.AbortedTxn) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	}
}

// reach enters the aborted transactions starting at or before offset.
func (t *txnTracker) reach(offset int64) {
	i := 0
	for ; i < len(t.pending) && t.pending[i].FirstOffset <= offset; i++ {
		a := t.pending[i]
		if _, ok := t.aborted[a.ProducerID]; !ok {
			t.aborted[a.ProducerID] = &abortedRun{txn: a}
		}
	}
	t.pending = t.pending[i:]
}

// onData records the data batch b and reports whether it belongs to an
// aborted transaction.
func (t *txnTracker) onData(b record.Batch) bool {
	t.reach(b.LastOffset())
	if !b.IsTransactional() {
		return false
	}
	if r, ok := t.aborted[b.ProducerID()]; ok {
		r.observed = true
		return true
	}
	t.committed[b.ProducerID()] = true
	return false
}

// markerState is what the tracker knows of a control batch.
type markerState struct {
	// discardable: no batch of the marker's transaction was seen in the
	// pass (or the batch holds no marker record any more).
	discardable bool
	// entry is the transaction index entry of an ABORT marker; indexed
	// says there is one.
	entry   segment.AbortedTxn
	indexed bool
}

// onControl records the control batch b and ends its producer's
// transaction.
func (t *txnTracker) onControl(b record.Batch) (markerState, error) {
	t.reach(b.LastOffset())
	m, ok, err := b.EndTxnMarker()
	if err != nil {
		return markerState{}, fmt.Errorf("control batch at offset %d: %w", b.BaseOffset(), err)
	}
	if !ok {
		return markerState{discardable: true}, nil
	}
	pid := b.ProducerID()
	if m.Commit {
		seen := t.committed[pid]
		delete(t.committed, pid)
		return markerState{discardable: !seen}, nil
	}
	delete(t.committed, pid)
	r, ok := t.aborted[pid]
	if !ok {
		return markerState{discardable: true}, nil
	}
	delete(t.aborted, pid)
	return markerState{discardable: !r.observed, entry: r.txn, indexed: true}, nil
}
