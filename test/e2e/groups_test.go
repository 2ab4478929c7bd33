package e2e

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// groupOverrides make rebalances and session expiry fast enough for tests.
var groupOverrides = map[string]string{
	"group.initial.rebalance.delay.ms": "100",
	"group.min.session.timeout.ms":     "500",
}

// groupCtx bounds one group test's client calls.
func groupCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// produceSpread produces n records numbered from first, round-robin over
// partitions, and waits for every ack.
func produceSpread(t *testing.T, addr, topic string, partitions, first, n int) {
	t.Helper()
	// No compression: python3-kafka cannot read kgo's default snappy.
	cl := harness.NewClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	recs := make([]*kgo.Record, 0, n)
	for i := first; i < first+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte("v" + strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(groupCtx(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records to %s: %v", n, topic, err)
	}
}

// tracker records which offsets consumers processed.
type tracker struct {
	mu      sync.Mutex
	seen    map[int32]map[int64]int
	n       int // distinct records
	changed chan struct{}
}

func newTracker() *tracker {
	return &tracker{seen: map[int32]map[int64]int{}, changed: make(chan struct{})}
}

func (tr *tracker) add(p int32, o int64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.seen[p] == nil {
		tr.seen[p] = map[int64]int{}
	}
	if tr.seen[p][o] == 0 {
		tr.n++
	}
	tr.seen[p][o]++
	close(tr.changed)
	tr.changed = make(chan struct{})
}

// waitFor waits until n distinct records were processed.
func (tr *tracker) waitFor(t *testing.T, n int, what string) {
	t.Helper()
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	for {
		tr.mu.Lock()
		got, ch := tr.n, tr.changed
		tr.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("%s: %d of %d records processed after 60s", what, got, n)
		}
	}
}

// first returns the lowest processed offset of each partition.
func (tr *tracker) first() map[int32]int64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := map[int32]int64{}
	for p, offs := range tr.seen {
		out[p] = slices.Min(slicesKeys(offs))
	}
	return out
}

func slicesKeys(m map[int64]int) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// severableDialer lets a test cut a client off the network, as a crash
// would: open connections are closed and new dials fail.
type severableDialer struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (d *severableDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("test: network cut")
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *severableDialer) sever() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		c.Close()
	}
}

// franzMember is a franz-go group consumer polling on its own goroutine.
type franzMember struct {
	t      *testing.T
	cl     *kgo.Client
	dialer *severableDialer
	cancel context.CancelFunc // stops polling and the client's context
	done   chan struct{}
	once   sync.Once
}

func startFranzMember(t *testing.T, addr, group, topic string, tr *tracker, opts ...kgo.Opt) *franzMember {
	t.Helper()
	m := &franzMember{t: t, dialer: &severableDialer{}, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	base := []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.Dialer(m.dialer.dial),
		kgo.WithContext(ctx),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(1500 * time.Millisecond),
		kgo.HeartbeatInterval(150 * time.Millisecond),
		kgo.RebalanceTimeout(10 * time.Second),
		kgo.AutoCommitInterval(200 * time.Millisecond),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatalf("new group member: %v", err)
	}
	m.cl = cl
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) { tr.add(r.Partition, r.Offset) })
		}
	}()
	t.Cleanup(m.crash)
	return m
}

// leave stops polling and closes the client, which commits what it polled
// and leaves the group.
func (m *franzMember) leave() {
	m.once.Do(func() {
		// Commit what was polled first, retrying while a rebalance is in
		// progress (REBALANCE_IN_PROGRESS), as a careful application does:
		// the commit inside Close is not retried.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for ctx.Err() == nil {
			if err := m.cl.CommitUncommittedOffsets(ctx); err == nil {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		cancel()
		closed := make(chan struct{})
		go func() {
			m.cl.Close()
			close(closed)
		}()
		m.waitClosed(closed)
		m.cancel()
		<-m.done
	})
}

// crash cuts the member off the network: no commit, no LeaveGroup; the
// coordinator must notice through the session timeout.
func (m *franzMember) crash() {
	m.once.Do(func() {
		m.dialer.sever()
		m.cancel()
		<-m.done
		closed := make(chan struct{})
		go func() {
			m.cl.Close()
			close(closed)
		}()
		m.waitClosed(closed)
	})
}

func (m *franzMember) waitClosed(closed chan struct{}) {
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		m.t.Errorf("group member did not close within 30s")
	}
}

// waitGroup polls DescribeGroups until check holds for the group.
func waitGroup(t *testing.T, adm *kadm.Client, group string, check func(kadm.DescribedGroup) bool) kadm.DescribedGroup {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds, err := adm.DescribeGroups(groupCtx(t), group)
		d := ds[group]
		if err == nil && d.Err == nil && check(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s not as expected after 30s: %+v (err %v)", group, d, err)
		}
		time.Sleep(50 * time.Millisecond) // the broker offers no signal to wait on
	}
}

// committedOffsets fetches a group's committed offsets of topic by partition.
func committedOffsets(t *testing.T, adm *kadm.Client, group, topic string) map[int32]kadm.OffsetResponse {
	t.Helper()
	resp, err := adm.FetchOffsets(groupCtx(t), group)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	out := map[int32]kadm.OffsetResponse{}
	for p, o := range resp[topic] {
		out[p] = o
	}
	return out
}

// checkCommittedAtEnd fails unless the group committed each partition's
// high watermark.
func checkCommittedAtEnd(t *testing.T, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(groupCtx(t), topic)
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	committed := committedOffsets(t, adm, group, topic)
	out := map[int32]int64{}
	ends.Each(func(e kadm.ListedOffset) {
		c, ok := committed[e.Partition]
		if !ok || c.At != e.Offset {
			t.Errorf("%s/%d: committed %v (found %v), want the end offset %d", topic, e.Partition, c.At, ok, e.Offset)
		}
		out[e.Partition] = e.Offset
	})
	return out
}

// TestGroupFranzMembers runs three franz-go members through joins, a
// graceful leave and a crash (session timeout), with the eager range
// balancer (and a broker restart in the middle) and with
// cooperative-sticky: every record of a bounded stream is processed at
// least once, the final commits equal the end offsets, and a fresh member
// resumes exactly there.
func TestGroupFranzMembers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
		restart  bool
	}{
		{"eager-range", kgo.RangeBalancer(), true},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const parts, phase = 6, 300
			b := harness.Start(t, groupOverrides)
			adm := b.Admin()
			topic, group := "grp-"+tc.name, "group-"+tc.name
			harness.CreateTopic(t, adm, topic, parts, nil)
			produceSpread(t, b.Addr(), topic, parts, 0, phase)

			tr := newTracker()
			bal := kgo.Balancers(tc.balancer)
			a := startFranzMember(t, b.Addr(), group, topic, tr, bal)
			bm := startFranzMember(t, b.Addr(), group, topic, tr, bal)
			c := startFranzMember(t, b.Addr(), group, topic, tr, bal)
			tr.waitFor(t, phase, "three members")
			if tc.restart {
				b.Restart()
			}

			bm.leave()
			c.crash()
			produceSpread(t, b.Addr(), topic, parts, phase, phase)
			tr.waitFor(t, 2*phase, "after a leave and a crash")
			a.leave()

			for p := range int32(parts) {
				for o := range int64(2 * phase / parts) {
					if tr.seen[p][o] == 0 {
						t.Fatalf("record %d/%d never processed", p, o)
					}
				}
			}
			committed := checkCommittedAtEnd(t, adm, group, topic)

			produceSpread(t, b.Addr(), topic, parts, 2*phase, parts)
			fresh := newTracker()
			f := startFranzMember(t, b.Addr(), group, topic, fresh, bal)
			fresh.waitFor(t, parts, "fresh member")
			f.leave()
			for p, o := range fresh.first() {
				if o != committed[p] {
					t.Errorf("fresh member started partition %d at %d, committed %d", p, o, committed[p])
				}
			}
		})
	}
}

// TestGroupStaticMemberRestart restarts a static member (group.instance.id)
// of a stable group: it gets its partitions back without a rebalance, so
// the other member sees no revocation or new assignment.
func TestGroupStaticMemberRestart(t *testing.T) {
	b := harness.Start(t, groupOverrides)
	adm := b.Admin()
	const topic, group = "static", "static-group"
	harness.CreateTopic(t, adm, topic, 4, nil)

	type events struct {
		mu       sync.Mutex
		assigned []map[string][]int32
		revoked  int
	}
	hooks := func(ev *events) []kgo.Opt {
		return []kgo.Opt{
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				ev.mu.Lock()
				ev.assigned = append(ev.assigned, m)
				ev.mu.Unlock()
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				ev.mu.Lock()
				if len(m) > 0 {
					ev.revoked++
				}
				ev.mu.Unlock()
			}),
		}
	}
	owned := func(ev *events) []int32 {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		var ps []int32
		for _, m := range ev.assigned {
			ps = append(ps, m[topic]...)
		}
		slices.Sort(ps)
		return ps
	}
	stable := func(what string, check func(kadm.DescribedGroup) bool) kadm.DescribedGroup {
		t.Helper()
		return waitGroup(t, adm, group, func(d kadm.DescribedGroup) bool { return d.State == "Stable" && check(d) })
	}

	tr := newTracker()
	evA1, evB := &events{}, &events{}
	a1 := startFranzMember(t, b.Addr(), group, topic, tr, append(hooks(evA1), kgo.InstanceID("a"))...)
	startFranzMember(t, b.Addr(), group, topic, tr, append(hooks(evB), kgo.InstanceID("b"))...)
	before := stable("two static members", func(d kadm.DescribedGroup) bool {
		return len(d.Members) == 2 && len(owned(evA1)) == 2 && len(owned(evB)) == 2
	})
	bAssigned, bRevoked := len(evB.assigned), evB.revoked
	a1Parts := owned(evA1)

	a1.leave() // a static member does not send LeaveGroup
	evA2 := &events{}
	startFranzMember(t, b.Addr(), group, topic, tr, append(hooks(evA2), kgo.InstanceID("a"))...)
	ids := func(d kadm.DescribedGroup) map[string]string {
		out := map[string]string{}
		for _, m := range d.Members {
			if m.InstanceID != nil {
				out[*m.InstanceID] = m.MemberID
			}
		}
		return out
	}
	// The description must postdate the rejoin: a snapshot taken just
	// before it can pass the ownership check once the assignment arrives.
	after := stable("a restarted", func(d kadm.DescribedGroup) bool {
		return len(owned(evA2)) == 2 && ids(d)["a"] != ids(before)["a"]
	})
	if got := owned(evA2); !slices.Equal(got, a1Parts) {
		t.Errorf("restarted member owns %v, before the restart %v", got, a1Parts)
	}
	evB.mu.Lock()
	if len(evB.assigned) != bAssigned || evB.revoked != bRevoked {
		t.Errorf("the other member saw a rebalance: assigned %d→%d, revoked %d→%d", bAssigned, len(evB.assigned), bRevoked, evB.revoked)
	}
	evB.mu.Unlock()
	if bi, ai := ids(before), ids(after); bi["a"] == ai["a"] || bi["b"] != ai["b"] || len(ai) != 2 {
		t.Errorf("member ids before %v, after %v: want a new id for a only", bi, ai)
	}
}

// TestGroupOffsetsSurviveKill9 commits offsets with metadata and leader
// epochs, kills the broker with SIGKILL and checks that every commit and
// the group survive.
func TestGroupOffsetsSurviveKill9(t *testing.T) {
	p := harness.StartProcess(t, groupOverrides)
	adm := harness.NewAdmin(t, p.Addr())
	harness.CreateTopic(t, adm, "durable", 3, nil)
	offsets := kadm.Offsets{}
	for i := range int32(3) {
		offsets.Add(kadm.Offset{Topic: "durable", Partition: i, At: int64(100 + i), LeaderEpoch: i, Metadata: "meta-" + strconv.Itoa(int(i))})
	}
	for _, g := range []string{"g1", "g2"} {
		resp, err := adm.CommitOffsets(groupCtx(t), g, offsets)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit offsets of %s: %v", g, err)
		}
	}
	p.Kill9()
	p.Restart()
	adm = harness.NewAdmin(t, p.Addr())
	for _, g := range []string{"g1", "g2"} {
		got := committedOffsets(t, adm, g, "durable")
		for i := range int32(3) {
			o := got[i]
			if o.At != int64(100+i) || o.LeaderEpoch != i || o.Metadata != "meta-"+strconv.Itoa(int(i)) {
				t.Errorf("%s partition %d after kill -9: %+v", g, i, o.Offset)
			}
		}
	}
	listed, err := adm.ListGroups(groupCtx(t))
	if err != nil {
		t.Fatalf("list groups: %v", err)
	}
	if names := listed.Groups(); !slices.Equal(names, []string{"g1", "g2"}) {
		t.Errorf("groups after restart %v", names)
	}
}
