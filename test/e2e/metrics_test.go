package e2e

import (
	"context"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestMetricsEndpoint scrapes metrics.listener after some traffic: per-API
// request counts and latency, bytes in and out per topic, partition and
// segment counts are all there, and so are Go's profiles.
func TestMetricsEndpoint(t *testing.T) {
	b, addr := startMetered(t)
	harness.CreateTopic(t, b.Admin(), "metered", 2, nil)
	cl := b.Client(kgo.DefaultProduceTopic("metered"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	harness.ReadAll(t, b.Addr(), "metered")
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`strata_requests_total{api="Produce"}`,
		`strata_requests_total{api="Fetch"}`,
		`strata_request_duration_seconds_bucket{api="Metadata"`,
		`strata_bytes_in_total{topic="metered"}`,
		`strata_bytes_out_total{topic="metered"}`,
		`strata_partitions `,
		`strata_log_segments{topic="metered"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Go's profiles are beside the metrics.
	resp, err = http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile") {
		t.Errorf("/debug/pprof/goroutine: %s %.80q", resp.Status, body)
	}
}

// startMetered starts a broker with a metrics listener and returns it and
// the listener's address.
func startMetered(t *testing.T) (*harness.Broker, string) {
	return startMeteredWith(t, nil)
}

// startMeteredWith is startMetered with more broker settings.
func startMeteredWith(t *testing.T, cfg map[string]string) (*harness.Broker, string) {
	addr := "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
	all := map[string]string{"metrics.listener": addr}
	maps.Copy(all, cfg)
	return harness.Start(t, all), addr
}

// metricValue reads the value of one series (name and labels, as exposed)
// from a broker's metrics listener, -1 when it is not there yet.
func metricValue(t *testing.T, addr, series string) int {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape metrics: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return -1
}
