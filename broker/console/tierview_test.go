package console_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
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
// the topic page, asked of broker 2 over the inter-broker path; the etcd
// endpoint shows as healthy.
func TestClusterTierView(t *testing.T) {
	etcd := harness.StartEtcd(t)
	var sites []*site
	for node := 1; node <= 2; node++ {
		sites = append(sites, startSite(t, map[string]string{"node.id": fmt.Sprint(node), "metadata.etcd.endpoints": etcd.Endpoint(),
			"remote.log.storage.system.enable": "true", "remote.log.manager.task.interval.ms": "100"}))
	}
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
	body = s.waitForMatch("/", regexp.MustCompile(`(?s)<tr id="broker-2">.*?data-bytes="[1-9]\d*".*?data-bytes="[1-9]\d*"`))
	for _, m := range brokerCells.FindAllStringSubmatch(body, -1) {
		if m[2] == "-1" || m[3] == "-1" {
			t.Fatalf("broker %s: local %s, tier %s bytes: unknown", m[1], m[2], m[3])
		}
	}
}

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
