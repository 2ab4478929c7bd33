package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestTxnGroupTransactSession: a franz-go GroupTransactSession reads an
// input topic in a consumer group and writes each record to an output
// topic in transactions that also commit the group's offsets
// (AddOffsetsToTxn, TxnOffsetCommit); a read_committed consumer then reads
// every input record exactly once from the output, and the group's
// committed offsets are the input's ends.
func TestTxnGroupTransactSession(t *testing.T) {
	b := harness.Start(t, map[string]string{"transaction.state.log.num.partitions": "3"})
	harness.CreateTopic(t, b.Admin(), "in", 2, nil)
	harness.CreateTopic(t, b.Admin(), "out", 2, nil)
	ctx := testCtx(t)

	const n = 200
	in := b.Client(kgo.DefaultProduceTopic("in"))
	for i := range n {
		if err := in.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "r%03d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce input %d: %v", i, err)
		}
	}

	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID("strata-gts"),
		kgo.ConsumerGroup("gts"), kgo.ConsumeTopics("in"), kgo.DefaultProduceTopic("out"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatalf("group transact session: %v", err)
	}
	defer sess.Close()
	moved := 0
	for rounds := 0; moved < n; rounds++ {
		if rounds == 1000 || ctx.Err() != nil {
			t.Fatalf("moved %d of %d records in %d transactions", moved, n, rounds)
		}
		fs := sess.PollFetches(ctx)
		for _, e := range fs.Errors() {
			t.Fatalf("poll input: %v", e.Err)
		}
		if err := sess.Begin(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		recs := fs.Records()
		for _, r := range recs {
			sess.Produce(ctx, &kgo.Record{Value: r.Value}, nil)
		}
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatalf("end transaction: %v", err)
		}
		if committed {
			moved += len(recs)
		}
	}

	got := readCommitted(t, ctx, b.Client, "out", n)
	for i := range n {
		if c := got[fmt.Sprintf("r%03d", i)]; c != 1 {
			t.Fatalf("output holds r%03d %d times, want once", i, c)
		}
	}
	offs, err := b.Admin().FetchOffsets(ctx, "gts")
	if err != nil {
		t.Fatalf("fetch group offsets: %v", err)
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
	if sum != n {
		t.Fatalf("group gts committed offsets summing to %d, want %d", sum, n)
	}
}

// readCommitted reads topic from the start with read_committed until it
// has n records and returns how often each value was read.
func readCommitted(t *testing.T, ctx context.Context, newClient func(...kgo.Opt) *kgo.Client, topic string, n int) map[string]int {
	t.Helper()
	cl := newClient(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got, total := map[string]int{}, 0
	for total < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s: %v", total, n, topic, ctx.Err())
		}
		for _, e := range fs.Errors() {
			t.Fatalf("poll %s: %v", topic, e.Err)
		}
		for _, r := range fs.Records() {
			got[string(r.Value)]++
			total++
		}
	}
	return got
}
