package txn

import (
	"errors"
	"math"
	"testing"
)

// transitionOps are the Prepare* methods, each with the state it targets
// from a fixture in state from.
var transitionOps = []struct {
	name    string
	prepare func(m *Metadata) (Txn, error)
	target  func(from State) State
	// valid lists the from states the method accepts, when it narrows
	// Kafka's table (the rest follow ValidTransition).
	valid []State
}{
	{"fence", func(m *Metadata) (Txn, error) { return m.PrepareFenceProducerEpoch() }, fixed(PrepareEpochFence), nil},
	{"init bump", func(m *Metadata) (Txn, error) { return m.PrepareIncrementProducerEpoch(30000, NoProducerEpoch, later) }, fixed(Empty), nil},
	{"init rotate", func(m *Metadata) (Txn, error) { return m.PrepareProducerIDRotation(2000, 30000, later, true) }, fixed(Empty), nil},
	{"add partitions", func(m *Metadata) (Txn, error) { return m.PrepareAddPartitions([]TopicPartition{tpC}, later, TV2) }, fixed(Ongoing), nil},
	{"commit v1", func(m *Metadata) (Txn, error) {
		return m.PrepareAbortOrCommit(PrepareCommit, TV1, NoProducerID, later, false)
	}, fixed(PrepareCommit), nil},
	{"commit v2", func(m *Metadata) (Txn, error) {
		return m.PrepareAbortOrCommit(PrepareCommit, TV2, NoProducerID, later, false)
	}, fixed(PrepareCommit), nil},
	{"abort v1", func(m *Metadata) (Txn, error) {
		return m.PrepareAbortOrCommit(PrepareAbort, TV1, NoProducerID, later, false)
	}, fixed(PrepareAbort), nil},
	{"abort v2", func(m *Metadata) (Txn, error) {
		return m.PrepareAbortOrCommit(PrepareAbort, TV2, NoProducerID, later, m.State != Ongoing && m.State != PrepareEpochFence)
	}, fixed(PrepareAbort), nil},
	{"complete", func(m *Metadata) (Txn, error) { return m.PrepareComplete(later) }, func(from State) State {
		if from == PrepareCommit {
			return CompleteCommit
		}
		return CompleteAbort
	}, nil},
	{"dead", func(m *Metadata) (Txn, error) { return m.PrepareDead() }, fixed(Dead), nil},
}

func fixed(s State) func(State) State { return func(State) State { return s } }

// TestTransitions prepares every transition from every state: valid ones
// become pending, block a second prepare, and complete into the target
// state (but a fence and Dead, which are never completed); invalid ones
// fail with ErrIllegalTransition and change nothing.
func TestTransitions(t *testing.T) {
	for _, op := range transitionOps {
		for _, from := range AllStates {
			t.Run(op.name+"/from "+from.String(), func(t *testing.T) {
				m := fixture(from, TV2)
				before := m.Txn.clone()
				to := op.target(from)
				valid := ValidTransition(from, to)
				if op.name == "init rotate" && from == Ongoing {
					valid = false // no rotation while a transaction is open
				}
				tx, err := op.prepare(m)
				if !valid {
					wantErr(t, err, ErrIllegalTransition)
					if _, ok := m.Pending(); ok {
						t.Fatal("a refused transition left a pending state")
					}
					return
				}
				tx = mustPrepare(t)(tx, err)
				if tx.State != to || tx.PrevProducerID != before.ProducerID {
					t.Fatalf("target %s prev id %d, want %s %d", tx.State, tx.PrevProducerID, to, before.ProducerID)
				}
				if p, ok := m.Pending(); !ok || p != to {
					t.Fatalf("pending %s %v, want %s", p, ok, to)
				}
				if _, err := op.prepare(m); !errors.Is(err, ErrIllegalTransition) {
					t.Fatalf("second prepare while pending: %v", err)
				}
				if m.State != from || m.ProducerEpoch != before.ProducerEpoch {
					t.Fatal("prepare changed the current state")
				}
				if to == Dead || to == PrepareEpochFence {
					wantErr(t, m.CompleteTransition(tx), ErrIllegalTransition)
					return
				}
				mustComplete(t, m, tx)
				if m.State != to {
					t.Fatalf("state %s after completion, want %s", m.State, to)
				}
			})
		}
	}
}

func TestCancelTransition(t *testing.T) {
	m := fixture(Ongoing, TV2)
	mustPrepare(t)(m.PrepareAbortOrCommit(PrepareCommit, TV2, NoProducerID, later, false))
	m.CancelTransition()
	if _, ok := m.Pending(); ok || m.State != Ongoing || m.ProducerEpoch != 5 {
		t.Fatalf("after cancel: pending %v state %s epoch %d", ok, m.State, m.ProducerEpoch)
	}
	tx := mustPrepare(t)(m.PrepareAbortOrCommit(PrepareAbort, TV2, NoProducerID, later, false))
	mustComplete(t, m, tx)
}

func TestInitProducerIDEpochs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		epoch     int16 // current epoch; last is epoch-1
		expected  int16
		wantEpoch int16
		wantLast  int16
		wantErr   error
	}{
		{"new producer", 5, NoProducerEpoch, 6, NoProducerEpoch, nil},
		{"first init", NoProducerEpoch, NoProducerEpoch, 0, NoProducerEpoch, nil},
		{"recovery at current epoch", 5, 5, 6, 5, nil},
		{"recovery with no epoch yet", NoProducerEpoch, 3, 0, NoProducerEpoch, nil},
		{"retry of a bump", 5, 4, 5, 4, nil},
		{"zombie", 5, 2, 0, 0, ErrProducerFenced},
		{"exhausted", math.MaxInt16 - 1, NoProducerEpoch, 0, 0, ErrIllegalTransition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := fixture(CompleteCommit, TV2)
			m.ProducerEpoch, m.LastProducerEpoch = tc.epoch, tc.epoch-1
			if tc.epoch == NoProducerEpoch {
				m.LastProducerEpoch = NoProducerEpoch
			}
			tx, err := m.PrepareIncrementProducerEpoch(30000, tc.expected, later)
			if tc.wantErr != nil {
				wantErr(t, err, tc.wantErr)
				if _, ok := m.Pending(); ok {
					t.Fatal("refused init left a pending state")
				}
				return
			}
			tx = mustPrepare(t)(tx, err)
			if tx.ProducerEpoch != tc.wantEpoch || tx.LastProducerEpoch != tc.wantLast {
				t.Fatalf("epoch %d last %d, want %d %d", tx.ProducerEpoch, tx.LastProducerEpoch, tc.wantEpoch, tc.wantLast)
			}
			if tx.ProducerID != 1000 || tx.TimeoutMs != 30000 || len(tx.Partitions) != 0 || tx.StartMs != -1 || tx.LastUpdateMs != later.UnixMilli() {
				t.Fatalf("target %+v", tx)
			}
			mustComplete(t, m, tx)
			if m.TimeoutMs != 30000 || m.ProducerEpoch != tc.wantEpoch {
				t.Fatalf("after completion %+v", m.Txn)
			}
		})
	}
}

func TestProducerIDRotation(t *testing.T) {
	for _, record := range []bool{true, false} {
		m := fixture(CompleteAbort, TV2)
		m.ProducerEpoch = math.MaxInt16 - 1
		if !m.EpochExhausted() {
			t.Fatal("epoch MaxInt16-1 is not exhausted")
		}
		tx := mustPrepare(t)(m.PrepareProducerIDRotation(2000, 30000, later, record))
		wantLast := NoProducerEpoch
		if record {
			wantLast = math.MaxInt16 - 1
		}
		if tx.ProducerID != 2000 || tx.ProducerEpoch != 0 || tx.LastProducerEpoch != wantLast || tx.PrevProducerID != 1000 {
			t.Fatalf("record %v: target %+v", record, tx)
		}
		mustComplete(t, m, tx)
		if m.ProducerID != 2000 || m.PrevProducerID != 1000 || m.EpochExhausted() {
			t.Fatalf("after rotation %+v", m.Txn)
		}
	}
}

func TestFenceProducerEpoch(t *testing.T) {
	m := fixture(Ongoing, TV2)
	tx := mustPrepare(t)(m.PrepareFenceProducerEpoch())
	if tx.ProducerEpoch != 6 || tx.State != PrepareEpochFence || len(tx.Partitions) != 2 {
		t.Fatalf("fence target %+v", tx)
	}
	m.FenceFailed() // the write failed: the next fence must not bump again
	if _, ok := m.Pending(); ok {
		t.Fatal("FenceFailed left the fence pending")
	}
	if tx = mustPrepare(t)(m.PrepareFenceProducerEpoch()); tx.ProducerEpoch != 5 {
		t.Fatalf("fence after a failed fence bumped to %d", tx.ProducerEpoch)
	}
	m = fixture(Ongoing, TV2)
	m.ProducerEpoch = math.MaxInt16
	_, err := m.PrepareFenceProducerEpoch()
	wantErr(t, err, ErrIllegalTransition)
}

func TestAddPartitions(t *testing.T) {
	m := fixture(CompleteCommit, TV2)
	tx := mustPrepare(t)(m.PrepareAddPartitions([]TopicPartition{tpA}, later, TV2))
	if tx.StartMs != later.UnixMilli() || len(tx.Partitions) != 1 {
		t.Fatalf("first add %+v", tx)
	}
	mustComplete(t, m, tx)
	then := later.Add(1000)
	tx = mustPrepare(t)(m.PrepareAddPartitions([]TopicPartition{tpA, tpB}, then, TV2))
	if tx.StartMs != later.UnixMilli() || tx.LastUpdateMs != then.UnixMilli() || len(tx.Partitions) != 2 {
		t.Fatalf("second add %+v", tx)
	}
	mustComplete(t, m, tx)
	if got := m.Partitions.Sorted(); len(got) != 2 || got[0] != tpA || got[1] != tpB {
		t.Fatalf("partitions %v", got)
	}
}

// TestEndTxnEpochs follows a commit to completion for both transaction
// versions: version 2 bumps the epoch at the prepare, version 1 never.
func TestEndTxnEpochs(t *testing.T) {
	for _, tc := range []struct {
		v         Version
		wantEpoch int16
		wantLast  int16
	}{{TV1, 5, 4}, {TV2, 6, 5}} {
		m := fixture(Ongoing, tc.v)
		tx := mustPrepare(t)(m.PrepareAbortOrCommit(PrepareCommit, tc.v, NoProducerID, later, false))
		if tx.ProducerEpoch != tc.wantEpoch || tx.LastProducerEpoch != tc.wantLast || tx.StartMs != t0.UnixMilli() {
			t.Fatalf("v%d prepare %+v", tc.v, tx)
		}
		mustComplete(t, m, tx)
		tx = mustPrepare(t)(m.PrepareComplete(later))
		if tx.State != CompleteCommit || tx.ProducerEpoch != tc.wantEpoch || len(tx.Partitions) != 0 || tx.ProducerID != 1000 {
			t.Fatalf("v%d complete %+v", tc.v, tx)
		}
		mustComplete(t, m, tx)
	}
}

// TestEndTxnEpochOverflow: a version 2 end at the last epoch moves to the
// next producer id at epoch 0 once complete; the last epoch stays the one
// the client saw.
func TestEndTxnEpochOverflow(t *testing.T) {
	m := fixture(Ongoing, TV2)
	m.ProducerEpoch, m.LastProducerEpoch = math.MaxInt16-1, math.MaxInt16-2
	tx := mustPrepare(t)(m.PrepareAbortOrCommit(PrepareAbort, TV2, 2000, later, false))
	if tx.ProducerEpoch != math.MaxInt16 || tx.NextProducerID != 2000 {
		t.Fatalf("prepare %+v", tx)
	}
	mustComplete(t, m, tx)
	tx = mustPrepare(t)(m.PrepareComplete(later))
	if tx.ProducerID != 2000 || tx.ProducerEpoch != 0 || tx.PrevProducerID != 1000 ||
		tx.LastProducerEpoch != math.MaxInt16-1 || tx.NextProducerID != NoProducerID || tx.State != CompleteAbort {
		t.Fatalf("complete %+v", tx)
	}
	mustComplete(t, m, tx)
}

// TestEmptyAbortV2: a version 2 client may abort with no transaction
// open; the abort starts now.
func TestEmptyAbortV2(t *testing.T) {
	m := fixture(Empty, TV2)
	tx := mustPrepare(t)(m.PrepareAbortOrCommit(PrepareAbort, TV2, NoProducerID, later, true))
	if tx.StartMs != later.UnixMilli() || tx.ProducerEpoch != 6 {
		t.Fatalf("prepare %+v", tx)
	}
	mustComplete(t, m, tx)
	mustComplete(t, m, mustPrepare(t)(m.PrepareComplete(later)))
	if m.State != CompleteAbort {
		t.Fatalf("state %s", m.State)
	}
}

func TestPrepareAbortOrCommitRejectsOtherStates(t *testing.T) {
	m := fixture(Ongoing, TV2)
	_, err := m.PrepareAbortOrCommit(CompleteCommit, TV2, NoProducerID, later, false)
	wantErr(t, err, ErrIllegalTransition)
}

// TestCompleteTransitionChecks: a completion that does not match what was
// prepared is refused and changes nothing.
func TestCompleteTransitionChecks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		from   State
		prep   func(m *Metadata) (Txn, error)
		tamper func(tx *Txn)
	}{
		{"nothing pending", Ongoing, nil, func(*Txn) {}},
		{"other state", Ongoing, func(m *Metadata) (Txn, error) { return m.PrepareAddPartitions(nil, later, TV2) }, func(tx *Txn) { tx.State = PrepareCommit }},
		{"init: epoch jump", Empty, func(m *Metadata) (Txn, error) { return m.PrepareIncrementProducerEpoch(1, NoProducerEpoch, later) }, func(tx *Txn) { tx.ProducerEpoch += 2 }},
		{"init: partitions", Empty, func(m *Metadata) (Txn, error) { return m.PrepareIncrementProducerEpoch(1, NoProducerEpoch, later) }, func(tx *Txn) { tx.Partitions = PartitionSet{tpA: {}} }},
		{"init: start time", Empty, func(m *Metadata) (Txn, error) { return m.PrepareIncrementProducerEpoch(1, NoProducerEpoch, later) }, func(tx *Txn) { tx.StartMs = 5 }},
		{"add: partition dropped", Ongoing, func(m *Metadata) (Txn, error) { return m.PrepareAddPartitions(nil, later, TV2) }, func(tx *Txn) { delete(tx.Partitions, tpA) }},
		{"add: epoch", Ongoing, func(m *Metadata) (Txn, error) { return m.PrepareAddPartitions(nil, later, TV2) }, func(tx *Txn) { tx.ProducerEpoch++ }},
		{"add: timeout", Ongoing, func(m *Metadata) (Txn, error) { return m.PrepareAddPartitions(nil, later, TV2) }, func(tx *Txn) { tx.TimeoutMs++ }},
		{"end: partitions", Ongoing, func(m *Metadata) (Txn, error) {
			return m.PrepareAbortOrCommit(PrepareCommit, TV2, NoProducerID, later, false)
		}, func(tx *Txn) { tx.Partitions[tpC] = struct{}{} }},
		{"end: start time", Ongoing, func(m *Metadata) (Txn, error) {
			return m.PrepareAbortOrCommit(PrepareCommit, TV2, NoProducerID, later, false)
		}, func(tx *Txn) { tx.StartMs++ }},
		{"end: producer id", Ongoing, func(m *Metadata) (Txn, error) {
			return m.PrepareAbortOrCommit(PrepareCommit, TV1, NoProducerID, later, false)
		}, func(tx *Txn) { tx.ProducerID++ }},
		{"complete: no start time", PrepareCommit, func(m *Metadata) (Txn, error) { return m.PrepareComplete(later) }, func(tx *Txn) { tx.StartMs = -1 }},
		{"complete: epoch", PrepareAbort, func(m *Metadata) (Txn, error) { return m.PrepareComplete(later) }, func(tx *Txn) { tx.ProducerEpoch++ }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := fixture(tc.from, TV2)
			var tx Txn
			if tc.prep != nil {
				tx = mustPrepare(t)(tc.prep(m))
			} else {
				tx = m.next(Ongoing)
			}
			tc.tamper(&tx)
			before := m.Txn.clone()
			wantErr(t, m.CompleteTransition(tx), ErrIllegalTransition)
			if m.State != before.State || m.ProducerEpoch != before.ProducerEpoch || len(m.Partitions) != len(before.Partitions) {
				t.Fatal("a refused completion changed the metadata")
			}
		})
	}
}

func TestPrepareChecksTarget(t *testing.T) {
	m := fixture(Empty, TV2)
	_, err := m.PrepareProducerIDRotation(-5, 1, later, false)
	wantErr(t, err, ErrIllegalTransition)
	m = NewMetadata("tx", 7, 1000, t0) // no epoch yet: only Dead may keep it
	if m.ProducerEpoch != NoProducerEpoch || m.State != Empty {
		t.Fatalf("new metadata %+v", m.Txn)
	}
	_, err = m.PrepareAddPartitions([]TopicPartition{tpA}, later, TV2)
	wantErr(t, err, ErrIllegalTransition)
	mustPrepare(t)(m.PrepareDead())
}
