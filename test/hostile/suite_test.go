package hostile

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

const (
	// livenessBound is how long a fresh client may take to be served
	// after a case: produce one record with acks=all and read it back.
	// It tells a broker that answers from one that is stuck or gone; it
	// is not a performance figure.
	livenessBound = 10 * time.Second
	// rssGrowthBound is how much the broker's resident set may grow over
	// a memory case. The attacks announce gigabytes (50 frames of 100
	// MB) or hold thousands of connections; a broker that allocated what
	// they announce would grow by far more.
	rssGrowthBound = 128 << 20
	// idleTimeout is the shared broker's connections.max.idle.ms: how
	// long it lets an idle connection, a half-sent frame or an unread
	// response hold a connection. Short, so that the cases that wait for
	// it stay short.
	idleTimeout = 3 * time.Second
	// closeBound is how long after idleTimeout a connection the broker
	// must drop may take to be seen closed.
	closeBound = idleTimeout + livenessBound
	// canaryTopic holds records produced with acks=all before the first
	// case; every check reads them all back.
	canaryTopic = "hostile-canary"
	// probeTopic takes the one record of each liveness check.
	probeTopic = "hostile-probe"
	// limitedIP is a loopback address with a per-ip connection limit of
	// limitedConns on the shared broker; the checks dial from 127.0.0.1.
	limitedIP    = "127.0.0.2"
	limitedConns = 20
)

// long reports whether the longer variants run (STRATA_HOSTILE_LONG=1,
// set by `make chaos`).
func long() bool {
	v, _ := strconv.ParseBool(os.Getenv("STRATA_HOSTILE_LONG"))
	return v
}

// scaled is n, or longN when the longer variants run.
func scaled(n, longN int) int {
	if long() {
		return longN
	}
	return n
}

// target is a broker process under attack with its canary records.
type target struct {
	p      *harness.Process
	canary map[int32][]string // values by partition, in offset order
	probes int
}

// startTarget starts a broker process (under wrapper, if any) with
// overrides, creates the canary and probe topics and produces the canary
// records with acks=all.
func startTarget(t *testing.T, wrapper []string, overrides map[string]string) *target {
	t.Helper()
	g := &target{p: harness.StartProcessUnder(t, wrapper, overrides), canary: map[int32][]string{}}
	adm := harness.NewAdmin(t, g.p.Addr())
	harness.CreateTopic(t, adm, canaryTopic, 3, nil)
	harness.CreateTopic(t, adm, probeTopic, 1, nil)
	cl := harness.NewClient(t, g.p.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	var recs []*kgo.Record
	for i := range 300 {
		p := int32(i % 3)
		v := fmt.Sprintf("canary-%d-%03d", p, i)
		recs = append(recs, &kgo.Record{Topic: canaryTopic, Partition: p, Value: []byte(v)})
		g.canary[p] = append(g.canary[p], v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce the canary records: %v", err)
	}
	cl.Close()
	return g
}

// check fails the test unless the broker process is alive, serves a
// fresh client within livenessBound and still holds every canary record.
func (g *target) check(t *testing.T) {
	t.Helper()
	if !g.p.Running() {
		t.Fatalf("the broker process is gone: %v", g.p.Err())
	}
	took, err := g.roundTrip()
	if err != nil {
		t.Fatalf("a fresh client is not served within %v: %v", livenessBound, err)
	}
	t.Logf("liveness round trip: %v", took.Round(time.Millisecond))
	got := harness.ReadAll(t, g.p.Addr(), canaryTopic)
	for p, want := range g.canary {
		if len(got[p]) != len(want) {
			t.Fatalf("canary %s/%d holds %d records, %d were acknowledged", canaryTopic, p, len(got[p]), len(want))
		}
		for i, r := range got[p] {
			if string(r.Value) != want[i] || r.Offset != int64(i) {
				t.Fatalf("canary %s/%d offset %d: %q, want %q at offset %d", canaryTopic, p, r.Offset, r.Value, want[i], i)
			}
		}
	}
}

// roundTrip produces one record to probeTopic with acks=all through a new
// client and reads it back, within livenessBound.
func (g *target) roundTrip() (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), livenessBound)
	defer cancel()
	g.probes++
	value := fmt.Sprintf("probe-%d", g.probes)
	pc, err := kgo.NewClient(kgo.SeedBrokers(g.p.Addr()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return 0, err
	}
	defer pc.Close()
	r := &kgo.Record{Topic: probeTopic, Value: []byte(value)}
	if err := pc.ProduceSync(ctx, r).FirstErr(); err != nil {
		return 0, fmt.Errorf("produce: %w", err)
	}
	cc, err := kgo.NewClient(kgo.SeedBrokers(g.p.Addr()), kgo.FetchMaxWait(100*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{probeTopic: {0: kgo.NewOffset().At(r.Offset)}}))
	if err != nil {
		return 0, err
	}
	defer cc.Close()
	for {
		fs := cc.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("read back offset %d: %w", r.Offset, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return 0, fmt.Errorf("read back offset %d: %v", r.Offset, errs[0].Err)
		}
		for _, got := range fs.Records() {
			if got.Offset == r.Offset {
				if string(got.Value) != value {
					return 0, fmt.Errorf("offset %d holds %q, want %q", r.Offset, got.Value, value)
				}
				return time.Since(start), nil
			}
		}
	}
}

// hostileCase is one attack on the shared broker.
type hostileCase struct {
	name string
	// memory cases have the broker's RSS compared before and after.
	memory bool
	run    func(t *testing.T, g *target)
}

// TestHostileInputs runs every case that needs no broker of its own
// against one broker process, checking it after each.
func TestHostileInputs(t *testing.T) {
	g := startTarget(t, nil, map[string]string{
		"connections.max.idle.ms":          strconv.FormatInt(idleTimeout.Milliseconds(), 10),
		"queued.max.request.bytes":         strconv.Itoa(16 << 20),
		"max.connections.per.ip.overrides": fmt.Sprintf("%s:%d", limitedIP, limitedConns),
	})
	g.check(t)
	cases := append(append([]hostileCase{}, wireCases...), recordCases...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			before := g.p.RSS()
			c.run(t, g)
			g.check(t)
			after := g.p.RSS()
			t.Logf("case took %v; broker RSS %s before, %s after", time.Since(start).Round(time.Millisecond), mib(before), mib(after))
			if c.memory && after-before > rssGrowthBound {
				t.Fatalf("broker RSS grew from %s to %s, more than %s", mib(before), mib(after), mib(rssGrowthBound))
			}
		})
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
