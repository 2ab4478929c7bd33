package handler

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMetricsSeriesAppearOnUse: an API's in-flight series appears with its
// first Start, and its request, error (at 0) and latency series with its
// first Observe, as when every request looked its series up.
func TestMetricsSeriesAppearOnUse(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	fetch, meta := int16(kmsg.Fetch), int16(kmsg.Metadata)
	// series maps "metric api" to the series' value (a histogram's count).
	series := func() map[string]float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range families {
			for _, s := range f.GetMetric() {
				key := f.GetName()
				for _, l := range s.GetLabel() {
					key += " " + l.GetValue()
				}
				switch {
				case s.Counter != nil:
					got[key] = s.GetCounter().GetValue()
				case s.Gauge != nil:
					got[key] = s.GetGauge().GetValue()
				case s.Histogram != nil:
					got[key] = float64(s.GetHistogram().GetSampleCount())
				}
			}
		}
		return got
	}
	check := func(when string, want map[string]float64) {
		t.Helper()
		got := series()
		if len(got) != len(want) {
			t.Errorf("%s: series %v, want %v", when, got, want)
			return
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s: series %v, want %v", when, got, want)
				return
			}
		}
	}
	m.Start(fetch)
	check("after Start", map[string]float64{"strata_requests_in_flight Fetch": 1})
	m.Observe(fetch, time.Millisecond, false)
	m.Start(fetch)
	m.Observe(fetch, time.Millisecond, true)
	m.Start(meta)
	m.Observe(meta, time.Millisecond, false)
	check("after answers", map[string]float64{
		"strata_requests_in_flight Fetch":          0,
		"strata_requests_total Fetch":              2,
		"strata_request_errors_total Fetch":        1,
		"strata_request_duration_seconds Fetch":    2,
		"strata_requests_in_flight Metadata":       0,
		"strata_requests_total Metadata":           1,
		"strata_request_errors_total Metadata":     0,
		"strata_request_duration_seconds Metadata": 1,
	})
}

// BenchmarkMetricsRequest is the per-request cost of Start and Observe
// once an API was used: no label lookups and no allocations.
func BenchmarkMetricsRequest(b *testing.B) {
	m := NewMetrics(prometheus.NewRegistry())
	fetch := int16(kmsg.Fetch)
	m.Start(fetch)
	m.Observe(fetch, time.Millisecond, false)
	b.ReportAllocs()
	for b.Loop() {
		m.Start(fetch)
		m.Observe(fetch, time.Millisecond, false)
	}
}
