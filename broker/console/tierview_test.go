package console_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// brokerCells finds a broker's local and tier bytes on the overview.
var brokerCells = regexp.MustCompile(`(?s)<tr id="broker-(\d+)">.*?data-bytes="(-?\d+)".*?data-bytes="(-?\d+)"`)

// TestClusterTierView: with tiering on and the partitions spread over two
// brokers, broker 1's console shows broker 2's local and tier bytes on
// the overview and the tier state of the partitions broker 2 leads on
// the topic page, asked of broker 2 over the inter-broker path, with
// each partition's copy lag (nothing once copied; the sealed segments of
// a topic whose copying is off); the etcd endpoint shows as healthy.
func TestClusterTierView(t *testing.T) {
	sites := startCluster(t, 2, func(int) map[string]string {
		return map[string]string{"remote.log.storage.system.enable": "true", "remote.log.manager.task.interval.ms": "100"}
	})
	s := sites[0]
	s.waitFor("/", `id="broker-2"`)
	s.must("/", `<span class="ok">healthy</span>`, `<span class="badge">leader</span>`)
	harness.CreateTopic(t, s.b.Admin(), "cold", 4, map[string]string{"remote.storage.enable": "true", "segment.bytes": "16384"})
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for p := range int32(4) {
		var recs []*kgo.Record
		for i := range 300 {
			recs = append(recs, &kgo.Record{Topic: "cold", Partition: p, Value: bytes.Repeat(fmt.Appendf(nil, "v%d-%d;", p, i), 20)})
		}
		for i := 0; i < len(recs); i += 50 {
			produce(t, cl, recs[i:i+50]...)
		}
	}
	// Each broker copies the sealed segments of the partitions it leads;
	// broker 1 learns broker 2's share only by asking it.
	tierRow := regexp.MustCompile(`<tr data-leader="2" data-remote-bytes="([1-9]\d*)"><td>(\d)</td>`)
	body := s.waitForMatch("/topics/cold", tierRow)
	part, _ := strconv.Atoi(tierRow.FindStringSubmatch(body)[2])
	remoteStart := regexp.MustCompile(fmt.Sprintf(`<td>%d</td><td>2</td><td>\d+</td>\s*<td>2</td><td>2</td>\s*<td class="n">0</td><td class="n">\d+</td><td class="n">0</td>`, part))
	if !remoteStart.MatchString(body) {
		t.Fatalf("partition %d, led by broker 2, shows no remote start 0:\n%s", part, body)
	}
	// Once every sealed segment is copied, each partition's copy lag,
	// broker 2's as it reports it, is nothing.
	var lags [][]string
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, body = s.get("/topics/cold")
		lags = copyLagCell.FindAllStringSubmatch(body, -1)
		done := len(lags) == 4
		for _, m := range lags {
			done = done && m[2] != "0" && m[4] == "true" && m[5] == "0" && m[6] == "0 B"
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("copy lags (leader, remote bytes, partition, tiered, segments, bytes): %q, want 4 tiered partitions, nothing left to copy:\n%s", lags, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	led := map[string]int{}
	for _, m := range lags {
		led[m[1]]++
	}
	if led["1"] == 0 || led["2"] == 0 {
		t.Fatalf("copy lags: want partitions of both brokers, got %v", led)
	}
	// With copying off, the sealed segments wait: each partition's copy
	// lag counts them, broker 2's as it reports it.
	harness.CreateTopic(t, s.b.Admin(), "held", 2, map[string]string{"remote.storage.enable": "true",
		"remote.log.copy.disable": "true", "segment.bytes": "16384"})
	for p := range int32(2) {
		var recs []*kgo.Record
		for i := range 300 {
			recs = append(recs, &kgo.Record{Topic: "held", Partition: p, Value: bytes.Repeat(fmt.Appendf(nil, "h%d-%d;", p, i), 20)})
		}
		for i := 0; i < len(recs); i += 50 {
			produce(t, cl, recs[i:i+50]...)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		_, body = s.get("/topics/held")
		lags = copyLagCell.FindAllStringSubmatch(body, -1)
		done := len(lags) == 2
		for _, m := range lags {
			n, _ := strconv.Atoi(m[5])
			done = done && m[2] == "0" && m[4] == "true" && n > 0 && strings.HasSuffix(m[6], " KiB")
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("held copy lags (leader, remote bytes, partition, tiered, segments, bytes): %q, want 2 tiered partitions with segments waiting:\n%s", lags, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if lags[0][1] == lags[1][1] {
		t.Fatalf("held: both partitions led by broker %s, want one each", lags[0][1])
	}
	body = s.waitForMatch("/", regexp.MustCompile(`(?s)<tr id="broker-2">.*?data-bytes="[1-9]\d*".*?data-bytes="[1-9]\d*"`))
	for _, m := range brokerCells.FindAllStringSubmatch(body, -1) {
		if m[2] == "-1" || m[3] == "-1" {
			t.Fatalf("broker %s: local %s, tier %s bytes: unknown", m[1], m[2], m[3])
		}
	}
}

// copyLagCell finds a tier row's leader, remote bytes, partition,
// tiered flag and copy lag in segments and bytes.
var copyLagCell = regexp.MustCompile(`(?s)<tr data-leader="(\d+)" data-remote-bytes="(\d+)"><td>(\d+)</td><td>\d+</td><td>(true|false)</td>.*?` +
	`<td class="n">(\d+) segments, ([^<]+)</td><td class="err">`)

// waitForMatch polls path until re matches it, for at most 30 s.
func (s *site) waitForMatch(path string, re *regexp.Regexp) string {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := s.get(path)
		if re.MatchString(body) {
			return body
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("GET %s: no match of %s after 30s:\n%s", path, re, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
