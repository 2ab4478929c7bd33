package txn

import (
	"errors"
	"math"
	"testing"
)

// ids is a ProducerIDSource handing out 2000, 2001, …
func ids() ProducerIDSource {
	next := int64(2000)
	return func() (int64, error) { next++; return next - 1, nil }
}

func failingIDs() (int64, error) { return 0, errors.New("no ids") }

func TestPrepareInitProducerID(t *testing.T) {
	for _, tc := range []struct {
		name        string
		state       State
		setup       func(m *Metadata)
		id          int64
		epoch       int16
		src         ProducerIDSource
		want        error
		wantState   State
		wantID      int64
		wantEpoch   int16
		wantLastSet int16
	}{
		{name: "new producer bumps", state: Empty, id: -1, epoch: -1, wantState: Empty, wantID: 1000, wantEpoch: 6, wantLastSet: -1},
		{name: "after a commit", state: CompleteCommit, id: -1, epoch: -1, wantState: Empty, wantID: 1000, wantEpoch: 6, wantLastSet: -1},
		{name: "KIP-360 recovery", state: CompleteAbort, id: 1000, epoch: 5, wantState: Empty, wantID: 1000, wantEpoch: 6, wantLastSet: 5},
		{name: "KIP-360 retry", state: Empty, id: 1000, epoch: 4, wantState: Empty, wantID: 1000, wantEpoch: 5, wantLastSet: 4},
		{name: "KIP-360 stale epoch", state: Empty, id: 1000, epoch: 3, want: ErrProducerFenced},
		{name: "KIP-360 other producer", state: Empty, id: 77, epoch: 5, want: ErrProducerFenced},
		{name: "KIP-360 on a fresh id", state: Empty, setup: func(m *Metadata) { m.ProducerEpoch, m.LastProducerEpoch = -1, -1 },
			id: 77, epoch: 9, wantState: Empty, wantID: 1000, wantEpoch: 0, wantLastSet: -1},
		{name: "exhausted: rotate", state: CompleteCommit, setup: func(m *Metadata) { m.ProducerEpoch = math.MaxInt16 - 1 },
			id: -1, epoch: -1, wantState: Empty, wantID: 2000, wantEpoch: 0, wantLastSet: -1},
		{name: "exhausted: recovery rotates, keeps the last epoch", state: Empty, setup: func(m *Metadata) { m.ProducerEpoch = math.MaxInt16 - 1 },
			id: 1000, epoch: math.MaxInt16 - 1, wantState: Empty, wantID: 2000, wantEpoch: 0, wantLastSet: math.MaxInt16 - 1},
		{name: "retry after a rotation", state: Empty, setup: func(m *Metadata) {
			m.ProducerID, m.PrevProducerID, m.ProducerEpoch, m.LastProducerEpoch = 2000, 1000, 0, math.MaxInt16-1
		}, id: 1000, epoch: math.MaxInt16 - 1, wantState: Empty, wantID: 2000, wantEpoch: 0, wantLastSet: math.MaxInt16 - 1},
		{name: "exhausted: no id", state: Empty, setup: func(m *Metadata) { m.ProducerEpoch = math.MaxInt16 - 1 }, id: -1, epoch: -1, src: failingIDs, want: errAny},
		{name: "ongoing: fence", state: Ongoing, id: -1, epoch: -1, wantState: PrepareEpochFence, wantID: 1000, wantEpoch: 6, wantLastSet: 4},
		{name: "committing", state: PrepareCommit, id: -1, epoch: -1, want: ErrConcurrentTransactions},
		{name: "aborting", state: PrepareAbort, id: -1, epoch: -1, want: ErrConcurrentTransactions},
		{name: "pending", state: Empty, setup: func(m *Metadata) { m.pending, m.hasPending = Ongoing, true }, id: -1, epoch: -1, want: ErrConcurrentTransactions},
		{name: "dead", state: Dead, id: -1, epoch: -1, want: ErrIllegalTransition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := fixture(tc.state, TV2)
			if tc.setup != nil {
				tc.setup(m)
			}
			src := tc.src
			if src == nil {
				src = ids()
			}
			tx, err := m.PrepareInitProducerID(30000, tc.id, tc.epoch, src, later)
			if tc.want != nil {
				if err == nil || (tc.want != errAny && !errors.Is(err, tc.want)) {
					t.Fatalf("error %v, want %v", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tx.State != tc.wantState || tx.ProducerID != tc.wantID || tx.ProducerEpoch != tc.wantEpoch || tx.LastProducerEpoch != tc.wantLastSet {
				t.Fatalf("target %s id %d epoch %d last %d", tx.State, tx.ProducerID, tx.ProducerEpoch, tx.LastProducerEpoch)
			}
			if tx.State == Empty {
				mustComplete(t, m, tx)
			}
		})
	}
}

// errAny: any error will do.
var errAny = errors.New("any error")

func TestPrepareAddPartitionsToTxn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		state  State
		id     int64
		epoch  int16
		add    []TopicPartition
		want   error
		noop   bool
		parts  int
		setupP bool
	}{
		{name: "first partitions", state: Empty, id: 1000, epoch: 5, add: []TopicPartition{tpA}, parts: 1},
		{name: "more partitions", state: Ongoing, id: 1000, epoch: 5, add: []TopicPartition{tpC}, parts: 3},
		{name: "already added", state: Ongoing, id: 1000, epoch: 5, add: []TopicPartition{tpB, tpA}, noop: true},
		{name: "other producer", state: Ongoing, id: 1001, epoch: 5, want: ErrInvalidProducerIDMapping},
		{name: "old epoch", state: Ongoing, id: 1000, epoch: 4, want: ErrProducerFenced},
		{name: "committing", state: PrepareCommit, id: 1000, epoch: 5, want: ErrConcurrentTransactions},
		{name: "aborting", state: PrepareAbort, id: 1000, epoch: 5, want: ErrConcurrentTransactions},
		{name: "pending", state: Ongoing, id: 1000, epoch: 5, want: ErrConcurrentTransactions, setupP: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := fixture(tc.state, TV2)
			if tc.setupP {
				m.pending, m.hasPending = Ongoing, true
			}
			tx, noop, err := m.PrepareAddPartitionsToTxn(tc.id, tc.epoch, tc.add, TV2, later)
			if tc.want != nil {
				wantErr(t, err, tc.want)
				return
			}
			if err != nil || noop != tc.noop {
				t.Fatalf("noop %v err %v", noop, err)
			}
			if noop {
				if _, ok := m.Pending(); ok {
					t.Fatal("a no-op left a pending state")
				}
				return
			}
			mustComplete(t, m, tx)
			if m.State != Ongoing || len(m.Partitions) != tc.parts {
				t.Fatalf("state %s partitions %v", m.State, m.Partitions.Sorted())
			}
		})
	}
}

func TestVerifyPartitions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state State
		id    int64
		epoch int16
		want  error
		perTP map[TopicPartition]error
	}{
		{name: "added and not", state: Ongoing, id: 1000, epoch: 5, perTP: map[TopicPartition]error{tpA: nil, tpC: ErrTransactionAbortable}},
		{name: "nothing open", state: CompleteCommit, id: 1000, epoch: 5, perTP: map[TopicPartition]error{tpA: ErrTransactionAbortable}},
		{name: "other producer", state: Ongoing, id: 7, epoch: 5, want: ErrInvalidProducerIDMapping},
		{name: "old epoch", state: Ongoing, id: 1000, epoch: 4, want: ErrProducerFenced},
		{name: "ending", state: PrepareAbort, id: 1000, epoch: 5, want: ErrConcurrentTransactions},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := fixture(tc.state, TV0)
			var tps []TopicPartition
			for tp := range tc.perTP {
				tps = append(tps, tp)
			}
			if tc.want != nil {
				tps = []TopicPartition{tpA}
			}
			before := m.Txn
			got, err := m.VerifyPartitions(tc.id, tc.epoch, tps)
			if tc.want != nil {
				wantErr(t, err, tc.want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for tp, w := range tc.perTP {
				if w == nil && got[tp] != nil || w != nil && !errors.Is(got[tp], w) {
					t.Errorf("%v: %v, want %v", tp, got[tp], w)
				}
			}
			if _, ok := m.Pending(); ok || m.State != before.State || len(m.Partitions) != len(before.Partitions) {
				t.Error("verification changed the metadata")
			}
		})
	}
}
