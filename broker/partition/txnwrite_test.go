package partition

import (
	"errors"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/producer"
	"github.com/strata-broker/strata/tier/record"
)

// TestAppendMarker: a marker is written as leader at the leader epoch,
// moves the high watermark of a single-replica partition and wakes
// waiters; it is fenced by role and epoch like AppendAsLeader, and the
// log's producer and coordinator epoch checks reach the caller.
func TestAppendMarker(t *testing.T) {
	p := onePartition(t, metadata.PartitionState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}, LeaderEpoch: 1})
	txn := record.NewBatch(record.BuildOptions{Transactional: true, Idempotent: true, ProducerID: 7, ProducerEpoch: 2},
		record.Record{Value: []byte("t")})
	if _, err := p.AppendAsLeader(1, []record.Batch{txn}, 1); err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 1)
	p.Wait(ch)
	defer p.Unwait(ch)
	off, err := p.AppendMarker(1, local.TxnMarker{ProducerID: 7, ProducerEpoch: 2, CoordinatorEpoch: 3})
	if err != nil || off != 1 {
		t.Fatalf("marker at offset %d, %v; want 1", off, err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("marker did not wake the waiter")
	}
	if hw := p.HighWatermark(); hw != 2 {
		t.Fatalf("high watermark %d after the marker, want 2", hw)
	}

	for name, c := range map[string]struct {
		epoch int32
		m     local.TxnMarker
		want  error
	}{
		"older leader epoch":      {0, local.TxnMarker{ProducerID: 7, ProducerEpoch: 2, CoordinatorEpoch: 3}, ErrNotLeaderOrFollower},
		"older producer epoch":    {1, local.TxnMarker{ProducerID: 7, ProducerEpoch: 1, CoordinatorEpoch: 3}, producer.ErrInvalidProducerEpoch},
		"older coordinator epoch": {1, local.TxnMarker{ProducerID: 7, ProducerEpoch: 2, CoordinatorEpoch: 2}, producer.ErrTransactionCoordinatorFenced},
	} {
		if _, err := p.AppendMarker(c.epoch, c.m); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	p.applyState(followerState(2), time.Now())
	if _, err := p.AppendMarker(-1, local.TxnMarker{ProducerID: 7, ProducerEpoch: 2, CoordinatorEpoch: 3}); !errors.Is(err, ErrNotLeaderOrFollower) {
		t.Fatalf("marker on a follower: %v", err)
	}
	if leo := p.Log().LogEndOffset(); leo != 2 {
		t.Fatalf("log end %d after refused markers, want 2", leo)
	}
}
