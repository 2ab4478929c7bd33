package console_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// lagCell is a topic row's name and consumer-lag cell.
var lagCell = regexp.MustCompile(`(?s)<td><a href="/topics/([^"]+)">[^<]*</a></td>.*?<td class="n lag">([^<]*)</td>`)

// topicLags is the topics of a topic-list page in order, with their lag.
func topicLags(body string) (names []string, lag map[string]string) {
	lag = map[string]string{}
	for _, m := range lagCell.FindAllStringSubmatch(body, -1) {
		names = append(names, m[1])
		lag[m[1]] = m[2]
	}
	return names, lag
}

// commitOffsets commits offs (topic, partition, offset) for group.
func commitOffsets(t *testing.T, adm *kadm.Client, group string, offs map[string]map[int32]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	var o kadm.Offsets
	for topic, ps := range offs {
		for p, at := range ps {
			o.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
		}
	}
	res, err := adm.CommitOffsets(ctx, group, o)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("commit %s: %v", group, err)
	}
}

func TestTopicLag(t *testing.T) {
	s := startSite(t, nil)
	adm := s.b.Admin()
	harness.CreateTopic(t, adm, "lagged", 2, nil)
	harness.CreateTopic(t, adm, "fresh", 1, nil)
	harness.CreateTopic(t, adm, "idle", 1, nil)
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		produce(t, cl, &kgo.Record{Topic: "lagged", Partition: 0, Value: fmt.Appendf(nil, "a%d", i)})
	}
	for i := range 5 {
		produce(t, cl, &kgo.Record{Topic: "lagged", Partition: 1, Value: fmt.Appendf(nil, "b%d", i)})
	}
	for i := range 3 {
		produce(t, cl, &kgo.Record{Topic: "fresh", Partition: 0, Value: fmt.Appendf(nil, "c%d", i)})
	}
	commit := func(group string, offs map[string]map[int32]int64) { commitOffsets(t, adm, group, offs) }
	commit("g1", map[string]map[int32]int64{"lagged": {0: 4, 1: 5}, "fresh": {0: 0}}) // lagged 6, fresh 3
	commit("g2", map[string]map[int32]int64{"lagged": {0: 10}})                       // lagged 0

	want := map[string]string{"lagged": "6", "fresh": "3", "idle": "-"}
	var lag map[string]string
	var names []string
	for deadline := time.Now().Add(20 * time.Second); ; {
		_, body := s.get("/topics?sort=lag&order=desc")
		names, lag = topicLags(body)
		if fmt.Sprint(lag) == fmt.Sprint(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // the lag index is rebuilt after its TTL
	}
	if fmt.Sprint(lag) != fmt.Sprint(want) {
		t.Fatalf("lag: got %v, want %v", lag, want)
	}
	if got := strings.Join(names, ","); got != "lagged,fresh,idle" {
		t.Fatalf("sort=lag desc: got %s", got)
	}
	_, body := s.get("/topics?sort=lag&order=asc")
	if names, _ = topicLags(body); strings.Join(names, ",") != "idle,fresh,lagged" {
		t.Fatalf("sort=lag asc: got %v", names)
	}
	s.must("/topics", "Consumer lag")
}

// TestClusterLag: a topic's lag counts the groups every broker
// coordinates and the high watermarks of partitions other brokers lead,
// asked over the inter-broker connection; both consoles agree.
func TestClusterLag(t *testing.T) {
	sites := startCluster(t, 2, nil)
	s := sites[0]
	s.waitFor("/", "<td>2</td>")
	adm := s.b.Admin()
	harness.CreateTopic(t, adm, "spread", 4, map[string]string{})
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(4) {
		for i := range 5 {
			produce(t, cl, &kgo.Record{Topic: "spread", Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	// One group coordinated by each broker.
	var groups []string
	seen := map[int32]bool{}
	for i := 0; i < 64 && len(groups) < 2; i++ {
		g := fmt.Sprintf("cg-%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
		res := adm.FindGroupCoordinators(ctx, g)
		cancel()
		for _, r := range res {
			if r.Err == nil && !seen[r.NodeID] {
				seen[r.NodeID] = true
				groups = append(groups, g)
			}
		}
	}
	if len(groups) != 2 {
		t.Fatalf("no group for each coordinator: %v", seen)
	}
	for _, g := range groups {
		commitOffsets(t, adm, g, map[string]map[int32]int64{"spread": {0: 2, 1: 2, 2: 2, 3: 2}}) // lag 3 a partition
	}
	for _, site := range sites {
		site.waitFor("/topics", `<td class="n lag">24</td>`)
	}
	// The leaders of the partitions: both brokers lead some.
	body := s.must("/topics/spread")
	if !regexp.MustCompile(`<tr >\s*<td>\d</td><td>2</td>`).MatchString(body) {
		t.Fatalf("broker 2 leads no partition of the topic:\n%s", body)
	}
}
