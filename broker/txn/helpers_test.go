package txn

import (
	"errors"
	"testing"
	"time"
)

// t0 is the fixtures' time of last update and transaction start.
var t0 = time.UnixMilli(1_700_000_000_000)

// later is when the fixtures' transitions happen.
var later = t0.Add(time.Second)

var (
	tpA = TopicPartition{"a", 0}
	tpB = TopicPartition{"b", 1}
	tpC = TopicPartition{"c", 2}
)

// fixture is a transactional id in state s: producer 1000 at epoch 5
// (last 4), partitions a-0 and b-1 while a transaction is open, started
// at t0 unless Empty.
func fixture(s State, v Version) *Metadata {
	m := &Metadata{TransactionalID: "tx", Txn: Txn{
		ProducerID: 1000, PrevProducerID: NoProducerID, NextProducerID: NoProducerID,
		ProducerEpoch: 5, LastProducerEpoch: 4, TimeoutMs: 60000, State: s,
		Partitions: PartitionSet{}, StartMs: -1, LastUpdateMs: t0.UnixMilli(), ClientVersion: v,
	}}
	switch s {
	case Ongoing, PrepareCommit, PrepareAbort, PrepareEpochFence:
		m.Partitions = PartitionSet{tpA: {}, tpB: {}}
		m.StartMs = t0.UnixMilli()
	case CompleteCommit, CompleteAbort, Dead:
		m.StartMs = t0.UnixMilli()
	}
	return m
}

// mustPrepare(t)(m.Prepare…()) returns the prepared target, failing the
// test on an error.
func mustPrepare(t *testing.T) func(Txn, error) Txn {
	return func(tx Txn, err error) Txn {
		t.Helper()
		if err != nil {
			t.Fatalf("prepare: %v", err)
		}
		return tx
	}
}

func mustComplete(t *testing.T, m *Metadata, tx Txn) {
	t.Helper()
	if err := m.CompleteTransition(tx); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if _, ok := m.Pending(); ok {
		t.Fatal("a transition is still pending after completion")
	}
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want %v", err, want)
	}
}
