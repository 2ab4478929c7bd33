package e2e

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
	"github.com/strata-broker/strata/test/minio"
)

// scrape reads the metrics endpoint at addr and returns every sample by
// its series ("name{labels}" as exposed).
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if strings.HasPrefix(line, "#") || i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read metrics: %v", err)
	}
	return out
}

// TestTieredBacklogMetric: while MinIO is down the copy backlog gauges of
// a tiered partition grow (sealed segments are kept locally), copy errors
// are counted and the broker logs a WARN; once MinIO is back the backlog
// drains to 0 and every record reads back.
func TestTieredBacklogMetric(t *testing.T) {
	srv := minio.Start(t)
	addr := "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
	cfg := minioTiering(srv)
	cfg["metrics.listener"] = addr
	b := harness.Start(t, cfg)
	harness.CreateTopic(t, b.Admin(), "backlog", 1, tieredTopic)
	cl := b.Client(tieredProducer...)
	want := produceTiered(t, cl, "backlog", 1, 300)[0]

	const labels = `{partition="0",topic="backlog"}`
	segs, bytes := "strata_remote_copy_backlog_segments"+labels, "strata_remote_copy_backlog_bytes"+labels
	size, errs := "strata_remote_log_size_bytes"+labels, "strata_remote_copy_errors_total"
	if _, ok := scrape(t, addr)[errs]; !ok {
		t.Fatal("no strata_remote_* metrics: broker/server.go must register tiering's collector (tier.collector(parts))")
	}
	waitFor(t, "every sealed segment copied and an empty backlog", func() bool {
		m := scrape(t, addr)
		return localLogs(t, b, "backlog", 0) == 1 && m[size] > 0 && m[segs] == 0 && m[bytes] == 0
	})
	before := scrape(t, addr)

	srv.Stop()
	want = append(want, produceTiered(t, cl, "backlog", 1, 600)[0]...)
	waitFor(t, "the backlog to grow while MinIO is down", func() bool {
		m := scrape(t, addr)
		return m[segs] >= 3 && m[bytes] > 3*8192 && m[errs] > before[errs]
	})
	during := scrape(t, addr)
	if during[size] != before[size] {
		t.Fatalf("remote bytes changed while MinIO was down: %v → %v", before[size], during[size])
	}
	logPath := filepath.Join(filepath.Dir(b.Dir()), "broker.log")
	logged, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logged), "level=WARN") || !strings.Contains(string(logged), "copy_backlog_segments=") {
		t.Fatalf("no WARN line with the copy backlog in %s", logPath)
	}

	if err := srv.Restart(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the backlog to drain after MinIO is back", func() bool {
		m := scrape(t, addr)
		return m[segs] == 0 && m[bytes] == 0 && m[size] > during[size]
	})
	t.Logf("backlog while MinIO was down: %v segments, %v bytes, %v copy errors", during[segs], during[bytes], during[errs])
	checkConsumed(t, b, "backlog", map[int32][]*kgo.Record{0: want})
}
