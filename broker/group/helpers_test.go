package group

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/broker/coordlog/coordlogtest"
	"github.com/strata-broker/strata/config"
)

// advance lets d pass on the fake clock of the test's bubble
// (testing/synctest) and returns once the timers due by then have run.
func advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// testLog is the coordinators' shared test log.
type testLog = coordlogtest.Log

var openTestLog = coordlogtest.Open

// env is a coordinator with one __consumer_offsets partition on a real
// log. Tests run it in a synctest bubble, whose fake clock drives its
// timers (advance); benchmarks run it on the real clock.
type env struct {
	t   testing.TB
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
	e := &env{t: t, dir: t.TempDir(), cfg: cfg}
	e.log = openTestLog(t, e.dir)
	e.start()
	return e
}

// start builds a coordinator over e.log and waits until it is loaded.
func (e *env) start() {
	e.t.Helper()
	e.c = New(e.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
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
