package handler

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metrics are the broker's request and traffic metrics. A nil *Metrics
// records nothing, so tests may leave it out.
type Metrics struct {
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	inFlight *prometheus.GaugeVec
	latency  *prometheus.HistogramVec
	in, out  *prometheus.CounterVec
	expired  *prometheus.CounterVec

	// The per-API children, looked up once per API key rather than on
	// every request (a label hash and a map lookup each). A Start makes
	// the in-flight gauge and an Observe the rest, so each series appears
	// when the API is first started or answered, as it would with a
	// lookup per request.
	started  [kmsg.MaxKey + 1]atomic.Pointer[startedSeries]
	answered [kmsg.MaxKey + 1]atomic.Pointer[answeredSeries]
}

// startedSeries is an API's child of the in-flight gauge.
type startedSeries struct {
	inFlight prometheus.Gauge
}

// answeredSeries are an API's children of the vectors an Observe updates.
type answeredSeries struct {
	requests, errors prometheus.Counter
	latency          prometheus.Observer
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_requests_total", Help: "Kafka requests handled, by API."}, []string{"api"}),
		errors:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_request_errors_total", Help: "Requests that failed as a whole (the connection was closed), by API."}, []string{"api"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "strata_requests_in_flight", Help: "Requests read and not yet answered (long polls included), by API."}, []string{"api"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "strata_request_duration_seconds", Help: "Time from a request's arrival to its response being queued, by API.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"api"}),
		in:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_bytes_in_total", Help: "Record bytes appended, by topic."}, []string{"topic"}),
		out: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_bytes_out_total", Help: "Record bytes served to fetches, by topic."}, []string{"topic"}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_fetch_expired_total",
			Help: "Fetches that waited and were answered at max.wait.ms with fewer than min.bytes, by fetcher (consumer or follower), as Kafka's DelayedFetchMetrics ExpiresPerSec."}, []string{"fetcher"}),
	}
	reg.MustRegister(m.requests, m.errors, m.inFlight, m.latency, m.in, m.out, m.expired)
	return m
}

// apiName is the metric label of an API key.
func apiName(key int16) string {
	if n := kmsg.NameForKey(key); n != "" {
		return n
	}
	return strconv.Itoa(int(key))
}

// Start records a request read; Observe records it answered.
func (m *Metrics) Start(key int16) {
	if m != nil {
		m.startedFor(key).inFlight.Inc()
	}
}

// Observe records one handled request (one Start before).
func (m *Metrics) Observe(key int16, took time.Duration, failed bool) {
	if m == nil {
		return
	}
	m.startedFor(key).inFlight.Dec()
	a := m.answeredFor(key)
	a.requests.Inc()
	a.latency.Observe(took.Seconds())
	if failed {
		a.errors.Inc()
	}
}

// startedFor returns key's in-flight child, looking it up on first use.
// Keys outside kmsg's range (none are handled) are looked up every time.
func (m *Metrics) startedFor(key int16) *startedSeries {
	if key < 0 || int(key) >= len(m.started) {
		return &startedSeries{m.inFlight.WithLabelValues(apiName(key))}
	}
	if s := m.started[key].Load(); s != nil {
		return s
	}
	// Racing first uses store equal values: a vector returns the same
	// child for the same labels.
	s := &startedSeries{m.inFlight.WithLabelValues(apiName(key))}
	m.started[key].Store(s)
	return s
}

// answeredFor returns key's children of the answered-request vectors,
// looking them up on first use. The error series is made with the
// others, so it exists (at 0) once the API was used and rates and
// alerts over it see 0 rather than no data.
func (m *Metrics) answeredFor(key int16) *answeredSeries {
	if key < 0 || int(key) >= len(m.answered) {
		return m.lookupAnswered(key)
	}
	if a := m.answered[key].Load(); a != nil {
		return a
	}
	a := m.lookupAnswered(key)
	m.answered[key].Store(a)
	return a
}

func (m *Metrics) lookupAnswered(key int16) *answeredSeries {
	name := apiName(key)
	return &answeredSeries{
		requests: m.requests.WithLabelValues(name),
		errors:   m.errors.WithLabelValues(name),
		latency:  m.latency.WithLabelValues(name),
	}
}

func (m *Metrics) bytesIn(topic string, n int) {
	if m != nil {
		m.in.WithLabelValues(topic).Add(float64(n))
	}
}

func (m *Metrics) bytesOut(topic string, n int) {
	if m != nil {
		m.out.WithLabelValues(topic).Add(float64(n))
	}
}

// fetchExpired records a fetch that waited out its max wait.
func (m *Metrics) fetchExpired(follower bool) {
	if m == nil {
		return
	}
	fetcher := "consumer"
	if follower {
		fetcher = "follower"
	}
	m.expired.WithLabelValues(fetcher).Inc()
}
