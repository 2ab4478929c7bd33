package fault

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
	"github.com/strata-broker/strata/test/txnchain"
)

const (
	// chainChunk is how many input records are produced around each
	// fault (and before the first).
	chainChunk = 600
	// chainMaxErrors bounds the errors a member recovers from.
	chainMaxErrors = 20
)

// chainProtocol is a group protocol the chain runs with: broker settings
// and client options.
type chainProtocol struct {
	overrides map[string]string
	opts      []kgo.Opt
}

var chainProtocols = map[string]chainProtocol{
	"eager":       {nil, []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
	"cooperative": {nil, []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}},
	"kip848": {map[string]string{
		"group.consumer.session.timeout.ms":    "6000",
		"group.consumer.heartbeat.interval.ms": "500",
	}, []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer())}},
}

// chainFault is a nemesis action against the chain: it picks a broker to
// kill -9 as a member of stage commits, and names the topic whose
// leaderships must move off it.
type chainFault struct {
	name string
	pick func(c *cluster, s txnchain.Stage, rng *rand.Rand) (id int32, topic, detail string)
}

var chainFaults = []chainFault{
	{"kill -9 transaction coordinator", func(c *cluster, s txnchain.Stage, _ *rand.Rand) (int32, string, string) {
		id := coordinator(c, coordinatorTxn, chainMemberID(s, 0))
		return id, txnStateTopic, fmt.Sprintf("broker %d (transaction coordinator of %s)", id, chainMemberID(s, 0))
	}},
	{"kill -9 group coordinator", func(c *cluster, s txnchain.Stage, _ *rand.Rand) (int32, string, string) {
		id := coordinator(c, coordinatorGroup, s.Group)
		return id, offsetsTopic, fmt.Sprintf("broker %d (group coordinator of %s)", id, s.Group)
	}},
	{"kill -9 output leader", func(c *cluster, s txnchain.Stage, rng *rand.Rand) (int32, string, string) {
		p := int32(rng.IntN(partitions))
		id := leaderOf(c, s.To, p)
		return id, s.To, fmt.Sprintf("broker %d (leader of %s/%d)", id, s.To, p)
	}},
}

const offsetsTopic = "__consumer_offsets"

// TestNemesisTxnChain runs txnchain's exactly-once GroupTransactSession
// pipeline (two stages of two members each) on the three-broker cluster,
// with __transaction_state and __consumer_offsets replicated three times,
// while the nemesis kill -9s, as a member of a stage begins to commit, the
// transaction coordinator of its transactional id, the coordinator of its
// group and the leader of a partition of its output topic, restarting
// each, STRATA_FAULT_ROUNDS times; input records are produced meanwhile.
// A member whose session fails opens another with the same transactional
// id. Every input record must come out of the chain exactly once with
// read_committed. STRATA_FAULT_GROUP_PROTOCOLS lists the group protocols
// to run it with (eager, cooperative, kip848; default cooperative).
func TestNemesisTxnChain(t *testing.T) {
	names := []string{"cooperative"}
	if s := os.Getenv("STRATA_FAULT_GROUP_PROTOCOLS"); s != "" {
		names = strings.Split(s, ",")
	}
	for _, name := range names {
		proto, ok := chainProtocols[name]
		if !ok {
			t.Fatalf("STRATA_FAULT_GROUP_PROTOCOLS: unknown protocol %q, want some of %v", name, slices.Sorted(maps.Keys(chainProtocols)))
		}
		t.Run(name, func(t *testing.T) { runNemesisTxnChain(t, proto) })
	}
}

func runNemesisTxnChain(t *testing.T, proto chainProtocol) {
	rounds := envInt(t, "STRATA_FAULT_ROUNDS", 1)
	seed, rng := nemesisRand(t)
	t.Logf("nemesis: seed %d (STRATA_FAULT_SEED=%d to replay), %d round(s)", seed, seed, rounds)
	cfg := txnClusterConfig()
	maps.Copy(cfg, map[string]string{
		"offsets.topic.num.partitions":     "3",
		"offsets.topic.replication.factor": "3",
		"group.initial.rebalance.delay.ms": "100",
		"group.min.session.timeout.ms":     "500",
	})
	maps.Copy(cfg, proto.overrides)
	c := startCluster(t, 3, cfg)
	for _, topic := range []string{txnchain.In, txnchain.Mid, txnchain.Out} {
		c.createTopic(topic)
	}
	seeds := c.seeds()
	newClient := func(opts ...kgo.Opt) *kgo.Client {
		return harness.NewClient(t, seeds[0], append(chainClientOpts(seeds), opts...)...)
	}

	// A member's last error cancels ctx: the verifier's poll returns and
	// the test fails with it.
	ctx, fail := context.WithCancelCause(context.Background())
	defer fail(nil)
	members := map[string]*txnchain.Member{}
	defer func() {
		fail(errors.New("the test is over"))
		for _, m := range members {
			m.Stop()
		}
	}()
	for _, s := range txnchain.Stages {
		for i := range 2 {
			id := chainMemberID(s, i)
			members[id] = txnchain.StartMember(ctx, s, id, txnchain.Options{
				Client:    append(chainClientOpts(seeds), proto.opts...),
				MaxErrors: chainMaxErrors,
				Fail:      fail,
			})
		}
	}
	v := txnchain.NewVerifier(ctx, newClient)
	v.Timeout = settle
	in := newClient(kgo.DefaultProduceTopic(txnchain.In))
	produced := 0
	feed := func() *chainFeeder {
		f := startChainFeeder(in, produced, chainChunk)
		produced += chainChunk
		return f
	}

	feed().wait(t)
	v.WaitFor(t, produced)
	began := time.Now()
	for round := range rounds {
		for i, f := range chainFaults {
			s := txnchain.Stages[(round+i)%len(txnchain.Stages)]
			start := time.Now()
			feeder := feed()
			id, topic, detail := f.pick(c, s, rng)
			m := members[chainMemberID(s, 0)]
			select {
			case <-m.Committing:
			case <-m.Done():
				t.Fatalf("member %s stopped: %v", chainMemberID(s, 0), context.Cause(ctx))
			case <-time.After(settle):
				t.Fatalf("member %s began no commit in %v (last error: %v)", chainMemberID(s, 0), settle, m.LastErr())
			}
			c.node(id).proc.Kill9()
			moved := c.waitGone(id, topic, settle)
			c.node(id).proc.Restart()
			feeder.wait(t)
			for _, topic := range []string{txnchain.In, txnchain.Mid, txnchain.Out, txnStateTopic, offsetsTopic} {
				c.waitFullISR(topic, partitions, settle)
			}
			v.WaitFor(t, produced)
			t.Logf("nemesis: round %d/%d %s: %s killed as %s committed; leaderships moved after %v; %d records through the chain, %v in all",
				round+1, rounds, f.name, detail, s.Group, moved.Round(time.Millisecond), produced, time.Since(start).Round(time.Millisecond))
		}
	}
	for _, m := range members {
		m.Stop()
	}

	// Every transaction has ended: the ends catch any duplicate committed
	// late.
	out := newClient(kgo.DefaultProduceTopic(txnchain.Out), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	pctx, cancel := context.WithTimeout(ctx, settle)
	defer cancel()
	if err := out.ProduceSync(pctx, txnchain.Ends(partitions)...).FirstErr(); err != nil {
		t.Fatalf("produce the ends: %v", err)
	}
	v.Check(t, produced, partitions)
	var aborted, errs int64
	var lastErr error
	for _, m := range members {
		aborted += m.Aborted.Load()
		errs += m.Errors.Load()
		if err := m.LastErr(); err != nil {
			lastErr = err
		}
	}
	t.Logf("nemesis: seed %d: %d records through the chain exactly once in %v of faults; %d transactions aborted, %d member errors recovered from (last: %v)",
		seed, produced, time.Since(began).Round(time.Millisecond), aborted, errs, lastErr)
}

// chainMemberID is the transactional id of member i of stage s.
func chainMemberID(s txnchain.Stage, i int) string { return fmt.Sprintf("%s-m%d", s.Group, i) }

// chainClientOpts make clients that retry for as long as a fault takes to
// heal, and group members that a dead coordinator does not expel for long.
func chainClientOpts(seeds []string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.RecordDeliveryTimeout(settle),
		kgo.RetryTimeout(settle),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.AlwaysRetryEOF(),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(500 * time.Millisecond),
	}
}

// chainFeeder produces input records to the chain on a goroutine, ten at
// a time, so that members have work whenever the nemesis waits for a
// commit, and through the fault.
type chainFeeder struct {
	done chan struct{}
	mu   sync.Mutex
	err  error
}

func startChainFeeder(cl *kgo.Client, from, n int) *chainFeeder {
	f := &chainFeeder{done: make(chan struct{})}
	go func() {
		defer close(f.done)
		ctx, cancel := context.WithTimeout(context.Background(), 2*settle)
		defer cancel()
		for i := from; i < from+n; i += 10 {
			if err := cl.ProduceSync(ctx, txnchain.Inputs(i, min(i+10, from+n))...).FirstErr(); err != nil {
				f.mu.Lock()
				f.err = fmt.Errorf("produce inputs %d to %d: %w", i, min(i+10, from+n)-1, err)
				f.mu.Unlock()
				return
			}
		}
	}()
	return f
}

// wait waits until every record was produced, failing the test on an
// error.
func (f *chainFeeder) wait(t *testing.T) {
	t.Helper()
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		t.Fatal(f.err)
	}
}
