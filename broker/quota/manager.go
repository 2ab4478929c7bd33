package quota

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-broker/strata/metadata"
)

// Kind is one kind of client quota.
type Kind uint8

// The kinds of quota, each with its key in AlterClientQuotas.
const (
	Produce            Kind = iota // producer_byte_rate: bytes of Produce requests per second
	Fetch                          // consumer_byte_rate: bytes of Fetch responses per second
	Request                        // request_percentage: percent of one request-handling thread's time
	ConnectionCreation             // connection_creation_rate: new connections per second, per ip
	numKinds
)

var kindKeys = [numKinds]string{"producer_byte_rate", "consumer_byte_rate", "request_percentage", "connection_creation_rate"}

// Key is the kind's quota key ("producer_byte_rate", ...).
func (k Kind) Key() string { return kindKeys[k] }

// String names the kind in metrics: produce, fetch, request, connection.
func (k Kind) String() string {
	return [numKinds]string{"produce", "fetch", "request", "connection"}[k]
}

// Source is where quotas come from: the metadata cache.
type Source interface {
	ClientQuota(e metadata.QuotaEntity) map[string]float64
	QuotaRevision() uint64
	ClientQuotas() map[metadata.QuotaEntity]map[string]float64
}

// Observer is told of every throttle (the broker's metrics); may be nil.
type Observer func(k Kind, d time.Duration)

// sensorKey names one measurement: the resolved entity with its defaults
// replaced by the client's own names (Kafka's quota metric tags).
type sensorKey struct {
	kind         Kind
	user, client string
	ip           netip.Addr
}

// resolved is the quota of one client for one kind: its value and the
// measurement it shares; ok false when none applies.
type resolved struct {
	quota float64
	key   sensorKey
	ok    bool
}

// seen is what the quotas held at one revision of the source.
type seen struct {
	gen   uint64
	kinds [numKinds]bool // kinds some entity has a quota of
}

// Manager measures clients against their quotas (see the package doc).
// The zero value is not usable; call New. A nil *Manager enforces no
// quota.
type Manager struct {
	src Source
	w   Window
	obs Observer

	// seen is the src.QuotaRevision byClient and kinds reflect, with
	// kinds: requests of a kind no entity has a quota for skip mu.
	seen atomic.Pointer[seen]

	mu        sync.Mutex
	byClient  map[sensorKey]resolved // by kind, user and client id (or ip) as the client gave them
	sensors   map[sensorKey]*rate
	lastSweep time.Time
}

// New returns a manager reading quotas from src, measuring over w (the
// DefaultWindow for a zero one), telling obs of throttles.
func New(src Source, w Window, obs Observer) *Manager {
	if w.Samples < 1 || w.Size <= 0 {
		w = DefaultWindow
	}
	m := &Manager{src: src, w: w, obs: obs, byClient: map[sensorKey]resolved{}, sensors: map[sensorKey]*rate{}}
	m.seen.Store(&seen{gen: ^uint64(0)})
	return m
}

// Record records v for the client (user is the principal's name without
// its "User:" type, clientID the request header's) against its quota of
// kind k at now, and returns how long the client is throttled; zero when
// it is within its quota or has none.
func (m *Manager) Record(k Kind, user, clientID string, v float64, now time.Time) time.Duration {
	if m == nil || !m.enabled(k) {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refresh(); !m.seen.Load().kinds[k] {
		return 0
	}
	r := m.resolve(sensorKey{kind: k, user: user, client: clientID})
	if !r.ok {
		return 0
	}
	s := m.sensor(r.key, now)
	s.record(m.w, v, now)
	perSecond, span := s.measure(m.w, now)
	d := throttle(perSecond, r.quota, span)
	if k == Request {
		d = min(d, m.w.Size) // as Kafka's request quota: at most one window
	}
	m.observe(k, d)
	return d
}

// RecordConnection records a new connection from ip at now against the
// ip's connection_creation_rate and returns how long it is throttled: a
// throttled connection is not counted and is closed after that long, as
// Kafka does. Zero: the connection is admitted.
func (m *Manager) RecordConnection(ip netip.Addr, now time.Time) time.Duration {
	if m == nil || !m.enabled(ConnectionCreation) {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refresh(); !m.seen.Load().kinds[ConnectionCreation] {
		return 0
	}
	r := m.resolve(sensorKey{kind: ConnectionCreation, ip: ip})
	if !r.ok {
		return 0
	}
	s := m.sensor(r.key, now)
	s.record(m.w, 1, now)
	perSecond, span := s.measure(m.w, now)
	d := throttle(perSecond, r.quota, span)
	if d > 0 {
		s.record(m.w, -1, now) // a refused connection does not count
		d = min(d, time.Duration(m.w.Samples)*m.w.Size)
	}
	m.observe(ConnectionCreation, d)
	return d
}

func (m *Manager) observe(k Kind, d time.Duration) {
	if d > 0 && m.obs != nil {
		m.obs(k, d)
	}
}

// Enabled reports whether some entity may have a quota of kind k: false
// only when, at the source's current revision, none has. Callers skip
// measuring what Record would ignore.
func (m *Manager) Enabled(k Kind) bool {
	return m != nil && m.enabled(k)
}

// enabled is Enabled on a non-nil m.
func (m *Manager) enabled(k Kind) bool {
	st := m.seen.Load()
	return st.gen != m.src.QuotaRevision() || st.kinds[k]
}

// refresh drops the resolutions when the quotas changed. m.mu held.
func (m *Manager) refresh() {
	gen := m.src.QuotaRevision()
	if gen == m.seen.Load().gen {
		return
	}
	clear(m.byClient)
	st := &seen{gen: gen}
	for _, vals := range m.src.ClientQuotas() {
		for k := range numKinds {
			if _, ok := vals[k.Key()]; ok {
				st.kinds[k] = true
			}
		}
	}
	m.seen.Store(st)
}

// sensor is the measurement of key, made at now if new. Now and then it
// drops measurements idle for longer than all the windows: a fresh one
// measures the same. m.mu held.
func (m *Manager) sensor(key sensorKey, now time.Time) *rate {
	expire := time.Duration(m.w.Samples) * m.w.Size
	if now.Sub(m.lastSweep) > expire {
		m.lastSweep = now
		for k, s := range m.sensors {
			if now.Sub(s.last) > expire {
				delete(m.sensors, k)
			}
		}
	}
	s, ok := m.sensors[key]
	if !ok {
		s = newRate(now)
		m.sensors[key] = s
	}
	return s
}

// maxResolutions bounds the memo of resolutions (clients can pick any
// client id): past it, the memo starts over.
const maxResolutions = 1 << 16

// resolve finds the quota of the client named by c (kind and user and
// client id, or ip). m.mu held.
func (m *Manager) resolve(c sensorKey) resolved {
	if r, ok := m.byClient[c]; ok {
		return r
	}
	r := m.lookup(c)
	if len(m.byClient) >= maxResolutions {
		clear(m.byClient)
	}
	m.byClient[c] = r
	return r
}

// lookup is resolve without the memo: Kafka's precedence (package doc).
func (m *Manager) lookup(c sensorKey) resolved {
	key := c.kind.Key()
	get := func(e metadata.QuotaEntity) (float64, bool) {
		v, ok := m.src.ClientQuota(e)[key]
		return v, ok
	}
	d := metadata.QuotaDefault
	if c.kind == ConnectionCreation {
		ip := c.ip.String()
		for _, e := range []metadata.QuotaEntity{{IP: ip}, {IP: d}} {
			if v, ok := get(e); ok {
				return resolved{quota: v, key: c, ok: true}
			}
		}
		return resolved{}
	}
	both := sensorKey{kind: c.kind, user: c.user, client: c.client}
	userOnly := sensorKey{kind: c.kind, user: c.user}
	clientOnly := sensorKey{kind: c.kind, client: c.client}
	for _, try := range []struct {
		e   metadata.QuotaEntity
		key sensorKey
	}{
		{metadata.QuotaEntity{User: c.user, ClientID: c.client}, both},
		{metadata.QuotaEntity{User: c.user, ClientID: d}, both},
		{metadata.QuotaEntity{User: c.user}, userOnly},
		{metadata.QuotaEntity{User: d, ClientID: c.client}, both},
		{metadata.QuotaEntity{User: d, ClientID: d}, both},
		{metadata.QuotaEntity{User: d}, userOnly},
		{metadata.QuotaEntity{ClientID: c.client}, clientOnly},
		{metadata.QuotaEntity{ClientID: d}, clientOnly},
	} {
		if v, ok := get(try.e); ok {
			return resolved{quota: v, key: try.key, ok: true}
		}
	}
	return resolved{}
}
