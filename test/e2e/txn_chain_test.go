package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestTxnChain runs an exactly-once pipeline of GroupTransactSessions:
// records produced to chain-in go through two transform stages (chain-in
// to chain-mid, chain-mid to chain-out, each stage a consumer group whose
// members read with read_committed and commit their offsets in the
// transaction that writes the stage's output) and a read_committed
// verifier reads chain-out. Each stage has two members, started at
// different times, and one member of each stage is replaced halfway, so
// the groups rebalance while transactions are open. Every input record
// must come out exactly once, transformed by both stages. It runs with
// the classic protocol's eager and cooperative balancers and with the
// KIP-848 consumer protocol.
func TestTxnChain(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		opts      []kgo.Opt
	}{
		{"eager", groupOverrides, []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
		{"cooperative", groupOverrides, []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}},
		{"kip848", kip848Overrides(), kip848Opts()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := maps.Clone(tc.overrides)
			o["transaction.state.log.num.partitions"] = "3"
			b := harness.Start(t, o)
			runTxnChain(t, b, tc.opts)
		})
	}
}

// chainStage is one transform stage of the pipeline: a group reading from
// and writing to (appending tag to each value).
type chainStage struct {
	group, from, to, tag string
}

var chainStages = []chainStage{
	{"chain-1", "chain-in", "chain-mid", "|1"},
	{"chain-2", "chain-mid", "chain-out", "|2"},
}

func runTxnChain(t *testing.T, b *harness.Broker, groupOpts []kgo.Opt) {
	const n, parts = 3000, 4
	for _, topic := range []string{"chain-in", "chain-mid", "chain-out"} {
		harness.CreateTopic(t, b.Admin(), topic, parts, nil)
	}
	// A member's error cancels ctx: the verifier's poll returns and the
	// test fails with it.
	ctx, fail := context.WithCancelCause(testCtx(t))
	defer fail(nil)
	var members []*chainMember
	start := func(s chainStage, i int) *chainMember {
		m := startChainMember(t, ctx, b.Addr(), s, fmt.Sprintf("%s-m%d", s.group, i), groupOpts, fail)
		members = append(members, m)
		return m
	}
	defer func() {
		for _, m := range members {
			m.stop()
		}
	}()
	first := make([]*chainMember, len(chainStages))
	for i, s := range chainStages {
		first[i] = start(s, 0)
	}

	in := b.Client(kgo.DefaultProduceTopic("chain-in"))
	produce := func(from, to int) {
		t.Helper()
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "r%05d", i)})
		}
		produceSync(t, in, recs...)
	}
	v := newChainVerifier(t, ctx, b.Client)

	// A second member joins each stage while the first is working, and
	// the first members are replaced once the second half is under way.
	produce(0, n/2)
	v.waitFor(n / 4)
	for _, s := range chainStages {
		start(s, 1)
	}
	v.waitFor(n / 2)
	produce(n/2, n)
	v.waitFor(n/2 + n/8)
	for i, s := range chainStages {
		first[i].stop()
		start(s, 2)
	}
	v.waitFor(n)
	for _, m := range members {
		m.stop()
	}

	// Every transaction has ended: a record produced now to each partition
	// of chain-out is readable only once everything before it is decided,
	// so reading up to it catches any duplicate committed late.
	out := b.Client(kgo.DefaultProduceTopic("chain-out"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(parts) {
		produceSync(t, out, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "end-%d", p)})
	}
	v.waitFor(n + parts)
	var aborted int64
	for _, m := range members {
		aborted += m.aborted.Load()
	}
	t.Logf("%d members moved %d records; %d transactions aborted by rebalances", len(members), n, aborted)
	for i := range n {
		want := fmt.Sprintf("r%05d|1|2", i)
		if c := v.got[want]; c != 1 {
			t.Errorf("chain-out holds %s %d times, want once", want, c)
		}
	}
	if len(v.got) != n+parts {
		for k := range v.got {
			if !strings.HasSuffix(k, "|1|2") && !strings.HasPrefix(k, "end-") {
				t.Errorf("chain-out holds unexpected %q", k)
			}
		}
	}
}

// chainMember is one GroupTransactSession of a stage, moving records in a
// goroutine until stopped.
type chainMember struct {
	cancel  context.CancelFunc
	done    chan struct{}
	once    sync.Once
	aborted atomic.Int64 // transactions a rebalance made End abort
}

// startChainMember starts a member of stage s with transactional ID id.
// An error is reported to fail; ctx bounds every call but the poll,
// which stop cancels (between transactions, so none is left open).
func startChainMember(t *testing.T, ctx context.Context, addr string, s chainStage, id string, groupOpts []kgo.Opt, fail context.CancelCauseFunc) *chainMember {
	t.Helper()
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(addr), kgo.TransactionalID(id), kgo.ConsumerGroup(s.group),
		kgo.ConsumeTopics(s.from), kgo.DefaultProduceTopic(s.to),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}, groupOpts...)
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		t.Fatalf("group transact session %s: %v", id, err)
	}
	pollCtx, cancel := context.WithCancel(ctx)
	m := &chainMember{cancel: cancel, done: make(chan struct{})}
	report := func(err error) { fail(fmt.Errorf("member %s: %w", id, err)) }
	go func() {
		defer close(m.done)
		defer sess.Close()
		for pollCtx.Err() == nil {
			fs := sess.PollFetches(pollCtx)
			if pollCtx.Err() != nil && fs.Empty() {
				return
			}
			failed := false
			fs.EachError(func(topic string, p int32, err error) {
				if pollCtx.Err() == nil {
					report(fmt.Errorf("poll %s/%d: %w", topic, p, err))
					failed = true
				}
			})
			recs := fs.Records()
			if failed {
				return
			}
			if len(recs) == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				report(fmt.Errorf("begin: %w", err))
				return
			}
			for _, r := range recs {
				sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: append(r.Value, s.tag...)}, func(r *kgo.Record, err error) {
					if err != nil && ctx.Err() == nil {
						report(fmt.Errorf("produce %s: %w", r.Value, err))
					}
				})
			}
			committed, err := sess.End(ctx, kgo.TryCommit)
			if err != nil {
				report(fmt.Errorf("end transaction: %w", err))
				return
			}
			if !committed {
				m.aborted.Add(1)
			}
		}
	}()
	return m
}

// stop cancels the member's poll, waits for its current transaction to
// end and closes the session (leaving the group).
func (m *chainMember) stop() {
	m.once.Do(func() {
		m.cancel()
		<-m.done
	})
}

// chainVerifier reads chain-out with read_committed, counting values.
type chainVerifier struct {
	t     *testing.T
	ctx   context.Context
	cl    *kgo.Client
	got   map[string]int
	total int
}

func newChainVerifier(t *testing.T, ctx context.Context, newClient func(...kgo.Opt) *kgo.Client) *chainVerifier {
	cl := newClient(kgo.ConsumeTopics("chain-out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	return &chainVerifier{t: t, ctx: ctx, cl: cl, got: map[string]int{}}
}

// waitFor reads until k records in all were read, failing on a member's
// error (which cancels ctx), a duplicate or the test's deadline.
func (v *chainVerifier) waitFor(k int) {
	v.t.Helper()
	for v.total < k {
		fs := v.cl.PollFetches(v.ctx)
		if v.ctx.Err() != nil {
			v.t.Fatalf("read %d of %d records of chain-out: %v", v.total, k, context.Cause(v.ctx))
		}
		for _, e := range fs.Errors() {
			v.t.Fatalf("poll chain-out: %v", e.Err)
		}
		for _, r := range fs.Records() {
			v.got[string(r.Value)]++
			v.total++
			if c := v.got[string(r.Value)]; c > 1 {
				v.t.Fatalf("chain-out: %s read %d times (partition %d offset %d)", r.Value, c, r.Partition, r.Offset)
			}
		}
	}
}
