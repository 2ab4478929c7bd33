package console_test

import (
	"regexp"
	"testing"
	"time"
)

// overviewRow is one broker row of the overview, as rendered.
type overviewRow struct {
	rack, listeners, state, leads, replicas, urp string
}

// brokerRowCells finds each broker row's rack, listeners, state, led
// partitions, replicas and under-replicated partitions.
var brokerRowCells = regexp.MustCompile(`(?s)<tr id="broker-(\d+)">\s*<td>[^\n]*</td>\s*<td>([^<]*)</td><td>(.*?)</td>\s*` +
	`<td><span class="(?:ok|warn)">(up|down)</span></td>\s*<td class="n">(\d+)</td><td class="n">(\d+)</td><td class="n">(\d+)</td>`)

// overviewRows is the overview's broker rows by id.
func overviewRows(body string) map[string]overviewRow {
	rows := map[string]overviewRow{}
	for _, m := range brokerRowCells.FindAllStringSubmatch(body, -1) {
		rows[m[1]] = overviewRow{rack: m[2], listeners: m[3], state: m[4], leads: m[5], replicas: m[6], urp: m[7]}
	}
	return rows
}

// TestOverviewBrokers: the overview's broker rows show each broker's
// rack, listener, state, the partitions it leads and holds and the
// under-replicated ones it leads; once broker 2 stops, its row shows it
// down and broker 1 leads every partition, those of replication factor
// 2 under-replicated.
func TestOverviewBrokers(t *testing.T) {
	sites := startCluster(t, 2, func(node int) map[string]string {
		cfg := map[string]string{"replica.lag.time.max.ms": "2000"}
		if node == 1 {
			cfg["broker.rack"] = "rack-a"
		}
		return cfg
	})
	s := sites[0]
	s.waitFor("/", `id="broker-2"`)
	cl := s.b.Client()
	createAssigned(t, cl, "ov-two", [][]int32{{1, 2}, {2, 1}})
	createAssigned(t, cl, "ov-one", [][]int32{{1}})
	waitISR(t, s.b.Admin(), "ov-two", 2)
	want := map[string]overviewRow{
		"1": {rack: "rack-a", listeners: "PLAINTEXT://" + s.b.Addr() + "<br>", state: "up", leads: "2", replicas: "3", urp: "0"},
		"2": {rack: "", listeners: "PLAINTEXT://" + sites[1].b.Addr() + "<br>", state: "up", leads: "1", replicas: "2", urp: "0"},
	}
	waitRows(t, s, want)

	sites[1].b.Stop()
	want["2"] = overviewRow{rack: "", listeners: "", state: "down", leads: "0", replicas: "2", urp: "0"}
	want["1"] = overviewRow{rack: "rack-a", listeners: want["1"].listeners, state: "up", leads: "3", replicas: "3", urp: "2"}
	waitRows(t, s, want)
}

// waitRows polls the overview until its broker rows are want, for at
// most 60 s.
func waitRows(t *testing.T, s *site, want map[string]overviewRow) {
	t.Helper()
	var got map[string]overviewRow
	var body string
	for deadline := time.Now().Add(60 * time.Second); ; {
		_, body = s.get("/")
		got = overviewRows(body)
		same := len(got) == len(want)
		for id, w := range want {
			same = same && got[id] == w
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("overview brokers: %+v, want %+v\n%s", got, want, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
