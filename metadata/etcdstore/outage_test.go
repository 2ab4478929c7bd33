package etcdstore

import (
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/strata-broker/strata/internal/faultproxy"
	"github.com/strata-broker/strata/internal/logbuf"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/etcdstore/etcdtest"
	"github.com/strata-broker/strata/metadata/metadatatest"
)

// logBuffer collects a store's logs for the test to read.
type logBuffer struct{ logbuf.Buffer }

// count is how many logged lines contain s.
func (l *logBuffer) count(s string) int { return strings.Count(l.String(), s) }

// waitLogged waits until s was logged.
func (l *logBuffer) waitLogged(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); l.count(s) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%q never logged; log:\n%s", s, l)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openLogged opens a store on endpoint whose logs (info and up) go to a
// buffer as well as to the test's stderr.
func openLogged(t *testing.T, endpoint, prefix string) (*Store, *logBuffer) {
	t.Helper()
	buf := &logBuffer{}
	log := slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s, err := Open(testCtx(t), []string{endpoint}, prefix, log)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("store log:\n%s", buf)
		}
	})
	return s, buf
}

// proxied opens a store that reaches the shared etcd through a proxy.
func proxied(t *testing.T) (*Store, *logBuffer, *faultproxy.Proxy) {
	t.Helper()
	px := faultproxy.Start(t, strings.TrimPrefix(etcdtest.Endpoints()[0], "http://"))
	s, buf := openLogged(t, px.Endpoint(), etcdtest.Prefix(t))
	return s, buf, px
}

// TestRegistrationSurvivesShortOutage: etcd silent for less than the
// lease's TTL (a paused process, a network stall) does not end the
// registration: the keep-alives are retried, the broker key stays as it
// was, and the outage is logged once, then its end.
func TestRegistrationSurvivesShortOutage(t *testing.T) {
	s, logs, px := proxied(t)
	watcher := openStore(t)
	ctx := testCtx(t)
	const ttl = 3 * time.Second
	b := metadata.Broker{ID: 1, Host: "127.0.0.1", Port: 9092, Incarnation: "a"}
	reg, err := s.RegisterBroker(ctx, b, ttl)
	if err != nil {
		t.Fatal(err)
	}
	// The first keep-alive attempt that fails (logged) comes at least a
	// third of the TTL before the lease would expire.
	px.Pause()
	logs.waitLogged(t, "etcd unreachable")
	px.Resume()
	logs.waitLogged(t, "etcd reachable again")
	if metadata.IsClosed(reg.Lost()) {
		t.Fatal("registration lost after an outage shorter than its TTL")
	}
	// Still kept alive: past another TTL the key is there, unchanged.
	time.Sleep(ttl)
	if metadata.IsClosed(reg.Lost()) {
		t.Fatal("registration lost after the outage")
	}
	if got, ok := watcher.Cache().Broker(1); !ok || !reflect.DeepEqual(got, b) {
		t.Fatalf("broker key after the outage: %+v, %v", got, ok)
	}
	if n := logs.count("etcd unreachable"); n != 1 {
		t.Errorf("outage logged %d times, want once:\n%s", n, logs)
	}
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRegistrationLostWhenLeaseExpired: etcd out of reach for longer
// than the TTL while its server lives on (a partitioned broker) expires
// the lease; once etcd answers again, the registration learns it and is
// lost. The progress of the outage was logged meanwhile.
func TestRegistrationLostWhenLeaseExpired(t *testing.T) {
	s, logs, px := proxied(t)
	watcher := openStore(t)
	ctx := testCtx(t)
	const ttl = time.Second
	reg, err := s.RegisterBroker(ctx, metadata.Broker{ID: 2, Host: "127.0.0.1", Port: 9092}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if err := watcher.Cache().WaitRevision(ctx, reg.Revision()); err != nil {
		t.Fatal(err)
	}
	px.Pause()
	waitFor(t, "the lease to expire", func() bool {
		_, ok := watcher.Cache().Broker(2)
		return !ok
	})
	if metadata.IsClosed(reg.Lost()) {
		t.Fatal("registration lost while etcd could not say so")
	}
	px.Resume()
	metadatatest.WaitClosed(t, reg.Lost(), "Lost once etcd answered that the lease is gone")
	if !strings.Contains(logs.String(), "lease_may_have_expired_for") && !strings.Contains(logs.String(), "lease_valid_for") {
		t.Errorf("outage logged without the lease's state:\n%s", logs)
	}
	waitFor(t, "own cache to drop the broker", func() bool {
		_, ok := s.Cache().Broker(2)
		return !ok
	})
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRegistrationSurvivesEtcdRestart: etcd stopped for longer than the
// TTL and restarted on its data keeps the lease (a new leader extends
// every lease), so the registration, whose client heard nothing for a
// whole TTL, must not give up: it renews the same lease and its key stays.
// The cache re-syncs and sees writes made after the restart.
func TestRegistrationSurvivesEtcdRestart(t *testing.T) {
	dir := t.TempDir()
	e, err := StartEmbedded(dir, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	px := faultproxy.Start(t, strings.TrimPrefix(e.Endpoints()[0], "http://"))
	s, logs := openLogged(t, px.Endpoint(), "/restart")
	ctx := testCtx(t)
	const ttl = 3 * time.Second
	b := metadata.Broker{ID: 3, Host: "127.0.0.1", Port: 9092}
	reg, err := s.RegisterBroker(ctx, b, ttl)
	if err != nil {
		t.Fatal(err)
	}
	// A crash: the connections go first, so that etcd's graceful stop
	// does not wait on them (while its lessor still expires leases).
	px.Pause()
	px.Reset()
	e.Close()
	logs.waitLogged(t, "etcd unreachable")
	waitFor(t, "the client to hear nothing for a whole TTL", func() bool {
		return time.Now().UnixNano() > reg.(*registration).deadline.Load()
	})
	if e, err = StartEmbedded(dir, testLogger()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	px.SetTarget(strings.TrimPrefix(e.Endpoints()[0], "http://"))
	px.Resume()
	logs.waitLogged(t, "etcd reachable again")
	time.Sleep(2 * ttl) // renewed since, or it would have expired
	if metadata.IsClosed(reg.Lost()) {
		t.Fatalf("registration lost across an etcd restart:\n%s", logs)
	}
	direct := openAt(t, e.Endpoints(), "/restart")
	if got, ok := direct.Cache().Broker(3); !ok || !reflect.DeepEqual(got, b) {
		t.Fatalf("broker key after the restart: %+v, %v", got, ok)
	}
	rev, err := direct.CreateTopic(ctx, metadatatest.TopicOf("after-restart", 1, 3))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Cache().WaitRevision(ctx, rev); err != nil {
		t.Fatalf("cache did not re-sync after the restart: %v", err)
	}
	if _, ok := s.Cache().Topic("after-restart"); !ok {
		t.Fatal("topic written after the restart missing from the cache")
	}
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOutageLoggedOnce: an outage is logged once when it begins, then as
// progress, and once when it ends; a request that was sent before etcd
// last answered and fails afterwards (it hung on a connection that is gone
// since) does not begin a new one.
func TestOutageLoggedOnce(t *testing.T) {
	buf := &logBuffer{}
	o := &outage{log: slog.New(slog.NewTextHandler(buf, nil))}
	err := errors.New("context deadline exceeded")
	t0 := time.Now()
	o.failed(err, t0)
	o.failed(err, t0.Add(time.Millisecond))
	o.reported = o.reported.Add(-outageProgressEvery) // ten seconds on
	o.failed(err, t0.Add(2*time.Millisecond))
	o.failed(err, t0.Add(3*time.Millisecond))
	o.ok(t0.Add(4 * time.Millisecond))
	o.failed(err, t0.Add(3*time.Millisecond)) // sent before the answer
	for s, want := range map[string]int{"etcd unreachable": 1, "etcd still unreachable": 1, "etcd reachable again": 1} {
		if n := buf.count(s); n != want {
			t.Errorf("%q logged %d times, want %d:\n%s", s, n, want, buf)
		}
	}
	o.failed(err, t0.Add(5*time.Millisecond)) // a new outage
	if n := buf.count("etcd unreachable"); n != 2 {
		t.Errorf("second outage logged %d times in all, want 2:\n%s", n, buf)
	}
}
