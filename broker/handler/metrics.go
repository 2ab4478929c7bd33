package handler

import (
	"strconv"
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
		m.inFlight.WithLabelValues(apiName(key)).Inc()
	}
}

// Observe records one handled request (one Start before).
func (m *Metrics) Observe(key int16, took time.Duration, failed bool) {
	if m == nil {
		return
	}
	name := apiName(key)
	m.inFlight.WithLabelValues(name).Dec()
	m.requests.WithLabelValues(name).Inc()
	m.latency.WithLabelValues(name).Observe(took.Seconds())
	// The error series exists (at 0) once the API was used, so rates
	// and alerts over it see 0 rather than no data.
	errs := m.errors.WithLabelValues(name)
	if failed {
		errs.Inc()
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
