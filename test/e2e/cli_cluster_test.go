package e2e

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-broker/strata/internal/logbuf"
	"github.com/strata-broker/strata/test/harness"
)

// cliHealth is the part of `strata cluster health --format json` the
// tests read.
type cliHealth struct {
	Healthy         bool
	Brokers         []int32
	DownBrokers     []int32  `json:"down_brokers"`
	UnderReplicated []string `json:"under_replicated"`
	Offline         []string
}

// TestCLIClusterHealth: on a two-broker cluster with a topic of
// replication factor 2, `strata cluster info` lists both brokers and
// `strata cluster health` exits 0; with one broker stopped it exits 1
// and names the under-replicated partitions and the down broker (and
// the leader's strata_under_replicated_partitions counts them); `health
// --watch --exit-when-healthy` started then exits 0 once the broker is
// back in every ISR.
func TestCLIClusterHealth(t *testing.T) {
	metrics := []string{"127.0.0.1:" + strconv.Itoa(harness.FreePort(t)), "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))}
	bs := startClusterWith(t, 2, func(id int) map[string]string {
		return map[string]string{"metrics.listener": metrics[id-1], "replica.lag.time.max.ms": "2000"}
	})
	br := "--brokers=" + bs[0].Addr()
	cliOK(t, "topic", "create", "cli-h", "-p", "2", "-r", "2", br)
	adm := bs[0].Admin()
	waitUntil(t, "both replicas in every ISR", 30*time.Second, func() bool {
		for _, s := range isr(t, adm, "cli-h") {
			if len(s) != 2 {
				return false
			}
		}
		return true
	})

	var info struct {
		ClusterID  string `json:"cluster_id"`
		Controller int32
		Brokers    []struct{ ID int32 }
	}
	cliJSON(t, &info, "cluster", "info", br)
	if info.ClusterID == "" || info.Controller < 1 || len(info.Brokers) != 2 {
		t.Fatalf("cluster info: %+v", info)
	}
	if out := cliOK(t, "cluster", "health", br); !strings.Contains(out, "HEALTHY           true") {
		t.Fatalf("health table: %q", out)
	}
	var h cliHealth
	cliJSON(t, &h, "cluster", "health", br)
	if !h.Healthy || len(h.Brokers) != 2 {
		t.Fatalf("health of a whole cluster: %+v", h)
	}

	bs[1].Stop()
	waitUntil(t, "health to exit 1", 30*time.Second, func() bool {
		_, _, code := strataCLI(t, "cluster", "health", br)
		return code == 1
	})
	out, errOut, code := strataCLI(t, "cluster", "health", br, "--format", "json")
	if code != 1 || json.Unmarshal([]byte(out), &h) != nil || h.Healthy || len(h.DownBrokers) != 1 || h.DownBrokers[0] != 2 ||
		len(h.UnderReplicated)+len(h.Offline) != 2 {
		t.Fatalf("health with broker 2 down: exit %d, %q, stderr %q", code, out, errOut)
	}
	t.Logf("health with broker 2 down: %s", strings.TrimSpace(errOut))
	waitUntil(t, "strata_under_replicated_partitions 2 on broker 1", 30*time.Second, func() bool {
		return metricValue(t, metrics[0], "strata_under_replicated_partitions") == 2
	})

	// --watch --exit-when-healthy prints the unhealthy cluster, then runs
	// until broker 2 is back in sync.
	watchOut := &logbuf.Buffer{}
	var watchErr bytes.Buffer
	watch := exec.CommandContext(testCtx(t), harness.Binary(t), "cluster", "health", br, "--watch", "--interval", "200ms", "--exit-when-healthy")
	watch.Stdout, watch.Stderr = watchOut, &watchErr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "health --watch to print the unhealthy cluster", 30*time.Second, func() bool {
		return strings.Contains(watchOut.String(), "HEALTHY           false")
	})
	bs[1].Restart()
	if err := watch.Wait(); err != nil {
		t.Fatalf("health --watch --exit-when-healthy: %v, stdout %q, stderr %q", err, watchOut.String(), watchErr.String())
	}
	out = watchOut.String()
	if last := out[strings.LastIndex(out, "HEALTHY"):]; !strings.HasPrefix(last, "HEALTHY           true") {
		t.Fatalf("health --watch ended with %q", last)
	}
	t.Logf("strata cluster health --watch:\n%s", out)
	cliJSON(t, &h, "cluster", "health", br)
	if !h.Healthy {
		t.Fatalf("health after the restart: %+v", h)
	}
	if n := metricValue(t, metrics[0], "strata_under_replicated_partitions") + metricValue(t, metrics[1], "strata_under_replicated_partitions"); n != 0 {
		t.Fatalf("strata_under_replicated_partitions: %d after the restart", n)
	}
}
