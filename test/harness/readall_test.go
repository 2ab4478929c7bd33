package harness

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReadAllEndsOnMarkers reads partitions whose last entries are
// transaction markers, which are never returned as records: partition 0
// ends with a commit marker, partition 1 with an abort marker (its
// aborted records are read, ReadAll being read_uncommitted) and partition
// 2 holds plain records only. ReadAll must return once its position
// passed each marker.
func TestReadAllEndsOnMarkers(t *testing.T) {
	b := Start(t, map[string]string{"transaction.state.log.num.partitions": "1"})
	const topic = "read-all-markers"
	CreateTopic(t, b.Admin(), topic, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), OpTimeout)
	defer cancel()
	plain := b.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(3) {
		if err := plain.ProduceSync(ctx, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "plain-%d", p)}).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}
	txn := b.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionalID("read-all"))
	for _, tc := range []struct {
		p   int32
		end kgo.TransactionEndTry
	}{{0, kgo.TryCommit}, {1, kgo.TryAbort}} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		for i := range 2 {
			if err := txn.ProduceSync(ctx, &kgo.Record{Partition: tc.p, Value: fmt.Appendf(nil, "txn-%d-%d", tc.p, i)}).FirstErr(); err != nil {
				t.Fatalf("produce in a transaction to partition %d: %v", tc.p, err)
			}
		}
		if err := txn.EndTransaction(ctx, tc.end); err != nil {
			t.Fatalf("end the transaction on partition %d: %v", tc.p, err)
		}
	}

	got := ReadAll(t, b.Addr(), topic)
	want := map[int32][]string{
		0: {"plain-0", "txn-0-0", "txn-0-1"},
		1: {"plain-1", "txn-1-0", "txn-1-1"},
		2: {"plain-2"},
	}
	for p, vals := range want {
		if len(got[p]) != len(vals) {
			t.Errorf("partition %d: read %d records, want %d", p, len(got[p]), len(vals))
			continue
		}
		for i, v := range vals {
			if r := got[p][i]; string(r.Value) != v || r.Offset != int64(i) {
				t.Errorf("partition %d record %d: %q at offset %d, want %q at offset %d", p, i, r.Value, r.Offset, v, i)
			}
		}
	}
}
