package partition

import (
	"errors"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
)

// TestTxnVerification: a producer's first transactional batch is appended
// under the guard it verified with, and the next ones of that epoch need
// no verification; a marker written meanwhile voids a guard, so the late
// append is refused and nothing is written; a new producer epoch or
// leader epoch verifies again.
func TestTxnVerification(t *testing.T) {
	p := onePartition(t, metadata.PartitionState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}, LeaderEpoch: 1})
	batch := func(seq int32) []record.Batch {
		return []record.Batch{record.NewBatch(record.BuildOptions{Transactional: true, Idempotent: true, ProducerID: 7, ProducerEpoch: 2, BaseSequence: seq},
			record.Record{Value: []byte("t")})}
	}
	g, ask := p.StartTxnVerification(7, 2)
	if !ask {
		t.Fatal("a first batch needs no verification")
	}
	if g2, _ := p.StartTxnVerification(7, 2); g2 != g {
		t.Fatal("a verification in flight of the same epoch is not shared")
	}
	if _, err := p.AppendVerified(1, 7, g, batch(0), 1); err != nil {
		t.Fatal(err)
	}
	if g2, ask := p.StartTxnVerification(7, 2); ask || g2 != g {
		t.Fatal("the transaction's next batch asks again")
	}
	if _, err := p.AppendVerified(1, 7, g, batch(1), 1); err != nil {
		t.Fatal(err)
	}

	// The transaction ends while the next one's first batch is verified.
	if _, err := p.AppendMarker(1, local.TxnMarker{ProducerID: 7, ProducerEpoch: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendVerified(1, 7, g, batch(2), 1); !errors.Is(err, ErrTxnNotVerified) {
		t.Fatalf("append after the marker: %v, want ErrTxnNotVerified", err)
	}
	g, ask = p.StartTxnVerification(7, 2)
	if !ask {
		t.Fatal("the next transaction is not verified anew")
	}
	if _, err := p.AppendMarker(1, local.TxnMarker{ProducerID: 7, ProducerEpoch: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendVerified(1, 7, g, batch(2), 1); !errors.Is(err, ErrTxnNotVerified) {
		t.Fatalf("append under a guard a marker voided: %v, want ErrTxnNotVerified", err)
	}
	if leo := p.Log().LogEndOffset(); leo != 4 {
		t.Fatalf("log end %d, want 4 (two batches, two markers)", leo)
	}

	g, _ = p.StartTxnVerification(7, 2)
	if g3, ask := p.StartTxnVerification(7, 3); !ask || g3 == g {
		t.Fatal("a newer producer epoch shares the older guard")
	}
	p.AbandonTxnVerification(7, g)
	if _, err := p.AppendVerified(1, 7, g, batch(2), 1); !errors.Is(err, ErrTxnNotVerified) {
		t.Fatalf("append under a replaced guard: %v", err)
	}
	p.applyState(metadata.PartitionState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}, LeaderEpoch: 2}, time.Now())
	if _, ask := p.StartTxnVerification(7, 3); !ask {
		t.Fatal("a new leader epoch trusts the old one's verification")
	}
}
