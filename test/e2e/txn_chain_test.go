package e2e

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
	"github.com/strata-broker/strata/test/txnchain"
)

// TestTxnChain runs txnchain's exactly-once pipeline of
// GroupTransactSessions on one broker: records produced to chain-in go
// through two transform stages (chain-in to chain-mid, chain-mid to
// chain-out, each stage a consumer group whose members read with
// read_committed and commit their offsets in the transaction that writes
// the stage's output) and a read_committed verifier reads chain-out. Each
// stage has two members, started at different times, and one member of
// each stage is replaced halfway, so the groups rebalance while
// transactions are open. Every input record must come out exactly once,
// transformed by both stages. It runs with the classic protocol's eager
// and cooperative balancers and with the KIP-848 consumer protocol.
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

func runTxnChain(t *testing.T, b *harness.Broker, groupOpts []kgo.Opt) {
	const n, parts = 3000, 4
	for _, topic := range []string{txnchain.In, txnchain.Mid, txnchain.Out} {
		harness.CreateTopic(t, b.Admin(), topic, parts, nil)
	}
	// A member's error cancels ctx: the verifier's poll returns and the
	// test fails with it.
	ctx, fail := context.WithCancelCause(testCtx(t))
	defer fail(nil)
	var members []*txnchain.Member
	start := func(s txnchain.Stage, i int) *txnchain.Member {
		m := txnchain.StartMember(ctx, s, fmt.Sprintf("%s-m%d", s.Group, i), txnchain.Options{
			Client: append([]kgo.Opt{kgo.SeedBrokers(b.Addr())}, groupOpts...),
			Fail:   fail,
		})
		members = append(members, m)
		return m
	}
	defer func() {
		for _, m := range members {
			m.Stop()
		}
	}()
	first := make([]*txnchain.Member, len(txnchain.Stages))
	for i, s := range txnchain.Stages {
		first[i] = start(s, 0)
	}

	in := b.Client(kgo.DefaultProduceTopic(txnchain.In))
	v := txnchain.NewVerifier(ctx, b.Client)

	// A second member joins each stage while the first is working, and
	// the first members are replaced once the second half is under way.
	produceSync(t, in, txnchain.Inputs(0, n/2)...)
	v.WaitFor(t, n/4)
	for _, s := range txnchain.Stages {
		start(s, 1)
	}
	v.WaitFor(t, n/2)
	produceSync(t, in, txnchain.Inputs(n/2, n)...)
	v.WaitFor(t, n/2+n/8)
	for i, s := range txnchain.Stages {
		first[i].Stop()
		start(s, 2)
	}
	v.WaitFor(t, n)
	for _, m := range members {
		m.Stop()
	}

	// Every transaction has ended: the ends catch any duplicate committed
	// late.
	out := b.Client(kgo.DefaultProduceTopic(txnchain.Out), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceSync(t, out, txnchain.Ends(parts)...)
	v.Check(t, n, parts)
	var aborted int64
	for _, m := range members {
		aborted += m.Aborted.Load()
	}
	t.Logf("%d members moved %d records; %d transactions aborted by rebalances", len(members), n, aborted)
}
