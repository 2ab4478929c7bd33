package group

import (
	"errors"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// fakeClock is a manual clock: timers fire only inside Advance, on the
// caller's goroutine, in deadline order.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c       *fakeClock
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// Advance moves the clock by d, firing due timers one by one.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	target := c.now.Add(d)
	c.mu.Unlock()
	for range 100000 {
		c.mu.Lock()
		live := c.timers[:0]
		for _, t := range c.timers {
			if !t.stopped {
				live = append(live, t)
			}
		}
		c.timers = live
		sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
		if len(c.timers) == 0 || c.timers[0].at.After(target) {
			c.now = target
			c.mu.Unlock()
			return
		}
		t := c.timers[0]
		t.stopped = true
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
	}
	panic("fakeClock: timers keep firing")
}

// testLog is a local.Log behind the Log interface; fail makes appends
// fail.
type testLog struct {
	l    *local.Log
	mu   sync.Mutex
	fail bool
}

func openTestLog(t testing.TB, dir string) *testLog {
	t.Helper()
	l, err := local.Open(dir, local.Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return &testLog{l: l}
}

var errInjected = errors.New("injected append failure")

func (tl *testLog) Append(batches []record.Batch, now int64) (local.AppendResult, error) {
	tl.mu.Lock()
	fail := tl.fail
	tl.mu.Unlock()
	if fail {
		return local.AppendResult{}, errInjected
	}
	return tl.l.AppendAsLeader(batches, local.AppendOptions{Now: now})
}

func (tl *testLog) Read(offset int64, maxBytes int) (segment.Slice, error) {
	return tl.l.Read(offset, maxBytes, tl.l.LogEndOffset())
}

func (tl *testLog) LogStartOffset() int64 { return tl.l.LogStartOffset() }
func (tl *testLog) HighWatermark() int64  { return tl.l.LogEndOffset() }

func (tl *testLog) setFail(v bool) {
	tl.mu.Lock()
	tl.fail = v
	tl.mu.Unlock()
}

// env is a coordinator with one __consumer_offsets partition on a real
// log and a fake clock.
type env struct {
	t   testing.TB
	clk *fakeClock
	c   *Coordinator
	log *testLog
	dir string
	cfg Config

	log2  Log                // when set, the coordinator's log instead of log
	setup func(*Coordinator) // when set, runs before the partition is elected
}

// testConfig is the broker's default group configuration with short
// session bounds, no initial delay, small groups and short retention.
func testConfig() Config {
	cfg := ConfigFrom(config.Default())
	cfg.InitialRebalanceDelay = 0
	cfg.MinSessionTimeout = time.Second
	cfg.MaxSessionTimeout = time.Minute
	cfg.MaxSize = 100
	cfg.OffsetsRetention = time.Hour
	cfg.RetentionCheckInterval = time.Minute
	cfg.MaxMetadataBytes = 64
	return cfg
}

func newEnv(t testing.TB, mod func(*Config)) *env {
	t.Helper()
	cfg := testConfig()
	if mod != nil {
		mod(&cfg)
	}
	e := &env{t: t, clk: newFakeClock(), dir: t.TempDir(), cfg: cfg}
	e.log = openTestLog(t, e.dir)
	e.start()
	return e
}

// start builds a coordinator over e.log and waits until it is loaded.
func (e *env) start() {
	e.t.Helper()
	e.c = New(e.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	e.c.clk = e.clk
	e.c.SetPartitionCount(1)
	if e.setup != nil {
		e.setup(e.c)
	}
	var l Log = e.log
	if e.log2 != nil {
		l = e.log2
	}
	e.c.Elect(0, 0, l)
	deadline := time.Now().Add(10 * time.Second)
	for !e.c.Loaded(0) {
		if time.Now().After(deadline) {
			e.t.Fatal("partition not loaded within 10s")
		}
		time.Sleep(time.Millisecond)
	}
	e.t.Cleanup(func() { e.c.Close() })
}

// restart closes the coordinator and loads the same log into a new one.
func (e *env) restart() {
	e.t.Helper()
	e.c.Close()
	e.start()
}

var consumerProto = []Protocol{{Name: "range", Metadata: []byte("meta")}}

func joinReq(group, member string) JoinRequest {
	return JoinRequest{
		Group: group, MemberID: member, ClientID: "client",
		ProtocolType: "consumer", Protocols: consumerProto,
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 20 * time.Second,
		RequireKnownMemberID: true, SupportsSkipAssignment: true,
	}
}

// joinAsync starts a join and returns its result channel (already holding
// the result when the join did not park).
func (e *env) joinAsync(req JoinRequest) <-chan JoinResult {
	res, wait := e.c.startJoin(req)
	if wait != nil {
		return wait
	}
	ch := make(chan JoinResult, 1)
	ch <- res
	return ch
}

// got returns what ch holds now, failing if it is still waiting.
func got[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	default:
		t.Fatal("request still waiting")
	}
	var zero T
	return zero
}

// waiting fails if ch already holds a result.
func waiting[T any](t testing.TB, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("request answered early: %+v", v)
	default:
	}
}

// joinNew runs the v4 join round trip of a new dynamic member and returns
// the channel of its second join.
func (e *env) joinNew(group string) <-chan JoinResult {
	e.t.Helper()
	first := got(e.t, e.joinAsync(joinReq(group, "")))
	if !errors.Is(first.Err, ErrMemberIDRequired) || first.MemberID == "" {
		e.t.Fatalf("first join: %+v, want MEMBER_ID_REQUIRED with an id", first)
	}
	return e.joinAsync(joinReq(group, first.MemberID))
}

func (e *env) syncAsync(req SyncRequest) <-chan SyncResult {
	res, wait := e.c.startSync(req)
	if wait != nil {
		return wait
	}
	ch := make(chan SyncResult, 1)
	ch <- res
	return ch
}

// stableGroup forms a Stable group of one member and returns its join result.
func (e *env) stableGroup(group string) JoinResult {
	e.t.Helper()
	j := got(e.t, e.joinNew(group))
	if j.Err != nil {
		e.t.Fatalf("join: %v", j.Err)
	}
	s := got(e.t, e.syncAsync(SyncRequest{Group: group, MemberID: j.MemberID, Generation: j.Generation,
		Assignments: map[string][]byte{j.MemberID: []byte("assign-" + j.MemberID)}}))
	if s.Err != nil {
		e.t.Fatalf("sync: %v", s.Err)
	}
	return j
}

func (e *env) state(group string) State {
	e.t.Helper()
	d, err := e.c.Describe(group)
	if err != nil {
		e.t.Fatalf("describe %s: %v", group, err)
	}
	for s := Empty; s <= Dead; s++ {
		if s.String() == d.State {
			return s
		}
	}
	e.t.Fatalf("unknown state %q", d.State)
	return Dead
}

func wantErr(t testing.TB, what string, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("%s: error %v, want %v", what, got, want)
	}
}
