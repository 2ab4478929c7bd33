package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestTxnSingleBroker: a franz-go transactional producer commits a
// transaction over two partitions, aborts the next and commits a third;
// a read_committed consumer reads exactly the committed records.
func TestTxnSingleBroker(t *testing.T) {
	b := harness.Start(t, map[string]string{"transaction.state.log.num.partitions": "3"})
	harness.CreateTopic(t, b.Admin(), "txn", 2, nil)
	txnRoundTrip(t, b.Client, "txn")
}

// TestTxnCluster is TestTxnSingleBroker on three brokers, the topic and
// __transaction_state replicated to all three: the coordinator writes
// the markers to leaders elsewhere through its peer connections.
func TestTxnCluster(t *testing.T) {
	bs := startCluster(t, 3, map[string]string{"transaction.state.log.num.partitions": "3"})
	resp, err := bs[0].Admin().CreateTopic(testCtx(t), 2, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "txn")
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	txnRoundTrip(t, bs[1].Client, "txn")
}

// txnRoundTrip runs the commit, abort, commit sequence on topic's
// partitions 0 and 1 with clients from newClient and checks what a
// read_committed consumer reads.
func txnRoundTrip(t *testing.T, newClient func(...kgo.Opt) *kgo.Client, topic string) {
	ctx := testCtx(t)
	pr := newClient(kgo.TransactionalID("strata-txn"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const perTxn = 10
	run := func(prefix string, commit bool) {
		t.Helper()
		if err := pr.BeginTransaction(); err != nil {
			t.Fatalf("begin %s: %v", prefix, err)
		}
		for i := range perTxn {
			r := &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, "%s-%d", prefix, i)}
			if err := pr.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %s-%d: %v", prefix, i, err)
			}
		}
		if err := pr.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end %s (commit %v): %v", prefix, commit, err)
		}
	}
	run("committed", true)
	run("aborted", false)
	run("again", true)

	want := map[string]bool{}
	for i := range perTxn {
		want[fmt.Sprintf("committed-%d", i)] = true
		want[fmt.Sprintf("again-%d", i)] = true
	}
	readCommittedOnce(t, newClient, topic, want)
	if err := context.Cause(ctx); err != nil {
		t.Fatal(err)
	}
}
