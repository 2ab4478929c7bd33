package quota

import (
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/metadata"
)

// quotas is a metadata cache holding the given entities' values, as the
// store's watch would fill it.
type quotas struct {
	c   *metadata.Cache
	rev int64
}

func newQuotas() *quotas { return &quotas{c: metadata.NewCache()} }

func (q *quotas) set(e metadata.QuotaEntity, vals map[string]float64) {
	q.rev++
	q.c.Apply(q.rev, []metadata.Change{{Kind: metadata.ChangeClientQuotas, Quota: e, Quotas: vals, Delete: len(vals) == 0}})
}

// TestFreshSensorSpan: a fresh measurement counts over num-1 whole
// windows, so a first burst up to quota × (num-1) s is not throttled, and
// one past it by 10 % is throttled for 10 % of that span, as Kafka does.
func TestFreshSensorSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQuotas()
		q.set(metadata.QuotaEntity{User: "alice"}, map[string]float64{"producer_byte_rate": 100})
		m := New(q.c, Window{Samples: 11, Size: time.Second}, nil)
		if d := m.Record(Produce, "alice", "app", 1000, time.Now()); d != 0 {
			t.Fatalf("1000 bytes over 10 s at 100 B/s: throttled %v", d)
		}
		if d := m.Record(Produce, "alice", "app", 100, time.Now()); d != time.Second {
			t.Fatalf("rate 110 B/s over 10 s: throttle %v, want 1s", d)
		}
		if d := m.Record(Fetch, "alice", "app", 1e9, time.Now()); d != 0 {
			t.Fatalf("no fetch quota, yet throttled %v", d)
		}
		if d := m.Record(Produce, "bob", "app", 1e9, time.Now()); d != 0 {
			t.Fatalf("bob has no quota, yet throttled %v", d)
		}
		// After all the windows passed, the measurement starts over.
		time.Sleep(12 * time.Second)
		if d := m.Record(Produce, "alice", "app", 1000, time.Now()); d != 0 {
			t.Fatalf("after the windows passed: throttled %v", d)
		}
	})
}

// TestSteadyRate: a client that sends as fast as it may, waiting out each
// throttle, is held at its quota over a long run.
func TestSteadyRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQuotas()
		q.set(metadata.QuotaEntity{ClientID: "app"}, map[string]float64{"producer_byte_rate": 1 << 20})
		m := New(q.c, Window{Samples: 3, Size: time.Second}, nil)
		const chunk = 64 << 10
		start := time.Now()
		var warm time.Time
		var sent float64
		for i := 0; time.Since(start) < 30*time.Second && i < 100000; i++ {
			if warm.IsZero() && time.Since(start) >= 5*time.Second {
				warm, sent = time.Now(), 0
			}
			sent += chunk
			d := m.Record(Produce, "", "app", chunk, time.Now())
			time.Sleep(d + time.Millisecond) // a millisecond per request
		}
		got := sent / time.Since(warm).Seconds()
		if got < 0.95*(1<<20) || got > 1.05*(1<<20) {
			t.Fatalf("steady rate %.0f B/s, want 1 MiB/s ± 5%%", got)
		}
	})
}

// TestPrecedence: the most specific entity wins, in Kafka's order, and
// clients share the measurement of the entity that matched them.
func TestPrecedence(t *testing.T) {
	d := metadata.QuotaDefault
	const key = "producer_byte_rate"
	q := newQuotas()
	m := New(q.c, DefaultWindow, nil)
	order := []metadata.QuotaEntity{
		{ClientID: d},
		{ClientID: "app"},
		{User: d},
		{User: d, ClientID: d},
		{User: d, ClientID: "app"},
		{User: "alice"},
		{User: "alice", ClientID: d},
		{User: "alice", ClientID: "app"},
	}
	want := []sensorKey{
		{kind: Produce, client: "app"},
		{kind: Produce, client: "app"},
		{kind: Produce, user: "alice"},
		{kind: Produce, user: "alice", client: "app"},
		{kind: Produce, user: "alice", client: "app"},
		{kind: Produce, user: "alice"},
		{kind: Produce, user: "alice", client: "app"},
		{kind: Produce, user: "alice", client: "app"},
	}
	// Adding ever more specific entities: each takes over.
	for i, e := range order {
		q.set(e, map[string]float64{key: float64(i + 1)})
		m.mu.Lock()
		m.refresh()
		r := m.resolve(sensorKey{kind: Produce, user: "alice", client: "app"})
		m.mu.Unlock()
		if !r.ok || r.quota != float64(i+1) || r.key != want[i] {
			t.Fatalf("with %v added: resolved %+v, want quota %d key %+v", e, r, i+1, want[i])
		}
	}
	// Removing them from the most specific: the next one down applies.
	for i := len(order) - 1; i > 0; i-- {
		q.set(order[i], nil)
		m.mu.Lock()
		m.refresh()
		r := m.resolve(sensorKey{kind: Produce, user: "alice", client: "app"})
		m.mu.Unlock()
		if !r.ok || r.quota != float64(i) {
			t.Fatalf("with %v removed: resolved %+v, want quota %d", order[i], r, i)
		}
	}
}

// TestSharedMeasurement: a user's quota holds all its clients together;
// the default user's holds each user apart.
func TestSharedMeasurement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQuotas()
		q.set(metadata.QuotaEntity{User: "alice"}, map[string]float64{"consumer_byte_rate": 100})
		q.set(metadata.QuotaEntity{User: metadata.QuotaDefault}, map[string]float64{"consumer_byte_rate": 100})
		m := New(q.c, Window{Samples: 2, Size: time.Second}, nil)
		now := time.Now()
		if d := m.Record(Fetch, "alice", "a", 100, now); d != 0 {
			t.Fatalf("first client throttled %v", d)
		}
		if d := m.Record(Fetch, "alice", "b", 100, now); d == 0 {
			t.Fatal("alice's second client is not held with the first")
		}
		if d := m.Record(Fetch, "bob", "a", 100, now); d != 0 {
			t.Fatalf("bob (default user) throttled %v by alice's use", d)
		}
		if d := m.Record(Fetch, "carol", "a", 100, now); d != 0 {
			t.Fatalf("carol (default user) throttled %v by bob's use", d)
		}
	})
}

// TestRequestAndConnectionCaps: the request-time throttle is at most one
// window; a refused connection is not counted, so the ip gets in again
// once its rate is back under the quota.
func TestRequestAndConnectionCaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newQuotas()
		q.set(metadata.QuotaEntity{User: metadata.QuotaDefault}, map[string]float64{"request_percentage": 1})
		q.set(metadata.QuotaEntity{IP: metadata.QuotaDefault}, map[string]float64{"connection_creation_rate": 2})
		var throttled int
		m := New(q.c, Window{Samples: 2, Size: time.Second}, func(Kind, time.Duration) { throttled++ })
		// 1 s of handling time = 100 percent-seconds against 1 %.
		if d := m.Record(Request, "u", "c", 100, time.Now()); d != time.Second {
			t.Fatalf("request throttle %v, want the 1 s cap", d)
		}
		ip := netip.MustParseAddr("127.0.0.1")
		for i := range 2 { // 2 per second over at least one window
			if d := m.RecordConnection(ip, time.Now()); d != 0 {
				t.Fatalf("connection %d throttled %v", i, d)
			}
		}
		for range 3 {
			if d := m.RecordConnection(ip, time.Now()); d == 0 || d > 2*time.Second {
				t.Fatalf("third connection: throttle %v", d)
			}
		}
		if d := m.RecordConnection(netip.MustParseAddr("127.0.0.2"), time.Now()); d != 0 {
			t.Fatalf("another ip throttled %v", d)
		}
		time.Sleep(1500 * time.Millisecond)
		if d := m.RecordConnection(ip, time.Now()); d != 0 {
			t.Fatalf("after the refused ones, once under the rate: throttled %v", d)
		}
		if throttled != 4 {
			t.Fatalf("observer told of %d throttles, want 4", throttled)
		}
	})
}
