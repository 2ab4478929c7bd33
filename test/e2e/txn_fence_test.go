package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestTxnZombieFenced: two producers share a transactional.id. The first
// (the zombie) has a transaction open with records written when the
// second initializes the id (InitProducerId bumps the epoch and aborts the
// open transaction); from then on the zombie's commit, or its next
// produce, fails, and a read_committed consumer never sees any of its
// records, only the successor's.
func TestTxnZombieFenced(t *testing.T) {
	b := harness.Start(t, map[string]string{"transaction.state.log.num.partitions": "3"})
	harness.CreateTopic(t, b.Admin(), "fence", 1, nil)
	for _, tc := range []struct {
		name   string
		fenced func(zombie *kgo.Client) error // the zombie's action after it was fenced
	}{
		{"commit", func(z *kgo.Client) error {
			return z.EndTransaction(testCtx(t), kgo.TryCommit)
		}},
		{"produce", func(z *kgo.Client) error {
			return z.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("zombie-produce-late")}).FirstErr()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			id := "fence-" + tc.name
			newProducer := func() *kgo.Client {
				return b.Client(kgo.TransactionalID(id), kgo.DefaultProduceTopic("fence"))
			}
			txn := func(cl *kgo.Client, prefix string, n int) {
				t.Helper()
				if err := cl.BeginTransaction(); err != nil {
					t.Fatalf("begin %s: %v", prefix, err)
				}
				for i := range n {
					if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%s-%s-%d", prefix, tc.name, i)}).FirstErr(); err != nil {
						t.Fatalf("produce %s-%d: %v", prefix, i, err)
					}
				}
			}

			zombie := newProducer()
			txn(zombie, "zombie", 5)
			successor := newProducer()
			txn(successor, "successor", 5) // its InitProducerId fences the zombie
			if err := successor.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatalf("successor commit: %v", err)
			}
			if err := tc.fenced(zombie); err == nil {
				t.Fatalf("the fenced zombie's %s succeeded", tc.name)
			} else {
				t.Logf("the fenced zombie's %s failed as it should: %v", tc.name, err)
			}
			// The zombie cannot commit either way.
			if err := zombie.EndTransaction(ctx, kgo.TryCommit); err == nil {
				t.Fatalf("the fenced zombie committed")
			}

			// A transaction the successor commits after the zombie's
			// attempts marks the end: once it is read, everything before
			// it in the partition has been decided.
			txn(successor, "successor-end", 1)
			if err := successor.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatalf("successor commit: %v", err)
			}
			cl := b.Client(kgo.ConsumeTopics("fence"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			var got []string
			for end := "successor-end-" + tc.name + "-0"; len(got) == 0 || got[len(got)-1] != end; {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					t.Fatalf("read_committed consumer read %q, not yet %s: %v", got, end, ctx.Err())
				}
				for _, e := range fs.Errors() {
					t.Fatalf("poll: %v", e.Err)
				}
				for _, r := range fs.Records() {
					if strings.Contains(string(r.Value), "-"+tc.name+"-") { // this subtest's
						got = append(got, string(r.Value))
					}
				}
			}
			for _, v := range got {
				if strings.HasPrefix(v, "zombie") {
					t.Errorf("read_committed consumer read the fenced zombie's %q", v)
				}
			}
			if want := 6; len(got) != want {
				t.Errorf("read_committed consumer read %q, want the successor's %d records", got, want)
			}
		})
	}
}
