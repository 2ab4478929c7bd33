package console_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// topicOrder is the topic names of a topic-list page, in order.
func topicOrder(body string) string {
	names, _ := topicLags(body)
	return strings.Join(names, ",")
}

// TestTopicListSort: the topic list sorts by partitions, size and hot
// bytes, both ways; names break ties.
func TestTopicListSort(t *testing.T) {
	s := startSite(t, nil)
	adm := s.b.Admin()
	harness.CreateTopic(t, adm, "s-a", 3, nil)
	harness.CreateTopic(t, adm, "s-b", 1, nil)
	harness.CreateTopic(t, adm, "s-c", 2, nil)
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	big := []byte(strings.Repeat("x", 1024))
	produce(t, cl, &kgo.Record{Topic: "s-a", Value: []byte("small")})
	for range 40 {
		produce(t, cl, &kgo.Record{Topic: "s-b", Value: big})
	}
	for range 10 {
		produce(t, cl, &kgo.Record{Topic: "s-c", Value: big})
	}
	for _, tc := range []struct{ query, want string }{
		{"sort=partitions&order=asc", "s-b,s-c,s-a"},
		{"sort=partitions&order=desc", "s-a,s-c,s-b"},
		{"sort=size&order=asc", "s-a,s-c,s-b"},
		{"sort=size&order=desc", "s-b,s-c,s-a"},
		{"sort=hot&order=asc", "s-a,s-c,s-b"},
		{"sort=hot&order=desc", "s-b,s-c,s-a"},
		{"sort=name&order=desc", "s-c,s-b,s-a"},
		{"sort=name", "s-a,s-b,s-c"},
	} {
		if got := topicOrder(s.must("/topics?filter=s-&" + tc.query)); got != tc.want {
			t.Errorf("/topics?%s: %s, want %s", tc.query, got, tc.want)
		}
	}
}

// urpCell is a topic row's name and under-replicated count.
var urpCell = regexp.MustCompile(`<td><a href="/topics/([^"]+)">[^<]*</a></td><td class="n">\d+</td><td class="n">\d+</td>\s*<td class="n ?(?:warn)?">(\d+)`)

// TestTopicListSortURP: with one of two brokers stopped, the topics of
// replication factor 2 are under-replicated, and the list sorts by
// their count both ways.
func TestTopicListSortURP(t *testing.T) {
	sites := startCluster(t, 2, func(int) map[string]string { return map[string]string{"replica.lag.time.max.ms": "2000"} })
	s := sites[0]
	s.waitFor("/", "<td>2</td>")
	cl := s.b.Client()
	createAssigned(t, cl, "u-two", [][]int32{{1, 2}, {2, 1}})
	createAssigned(t, cl, "u-one", [][]int32{{1, 2}})
	createAssigned(t, cl, "u-zero", [][]int32{{1}, {1}})
	waitISR(t, s.b.Admin(), "u-two", 2)
	waitISR(t, s.b.Admin(), "u-one", 2)
	sites[1].b.Stop()
	want := "u-two=2,u-one=1,u-zero=0"
	var got string
	for deadline := time.Now().Add(60 * time.Second); ; {
		_, body := s.get("/topics?filter=u-&sort=urp&order=desc")
		var rows []string
		for _, m := range urpCell.FindAllStringSubmatch(body, -1) {
			rows = append(rows, m[1]+"="+m[2])
		}
		if got = strings.Join(rows, ","); got == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sort=urp desc: %s, want %s\n%s", got, want, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := topicOrder(s.must("/topics?filter=u-&sort=urp&order=asc")); got != "u-zero,u-one,u-two" {
		t.Fatalf("sort=urp asc: %s", got)
	}
}

// createAssigned creates topic with replicas[i] the replicas of
// partition i.
func createAssigned(t *testing.T, cl *kgo.Client, topic string, replicas [][]int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for i, rs := range replicas {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), rs
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	res, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(res.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// waitISR waits until every partition of topic has n replicas in sync.
func waitISR(t *testing.T, adm *kadm.Client, topic string, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
		td, err := adm.ListTopics(ctx, topic)
		cancel()
		ok := err == nil && len(td[topic].Partitions) > 0
		if ok {
			for _, p := range td[topic].Partitions {
				ok = ok && len(p.ISR) == n
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %d replicas in sync after 30s: %v %v", topic, n, td, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMessageSeekAndFilters: seek by timestamp (milliseconds and RFC
// 3339), key and value substring filters, a binary value shown as hex,
// and the CSV export's header and rows.
func TestMessageSeekAndFilters(t *testing.T) {
	s := startSite(t, nil)
	harness.CreateTopic(t, s.b.Admin(), "m", 1, nil)
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.UnixMilli(1_700_000_000_000) // 2023-11-14T22:13:20Z
	for i := range 10 {
		key := fmt.Sprintf("user-%d", i)
		if i == 7 {
			key = "admin-7"
		}
		produce(t, cl, &kgo.Record{Topic: "m", Key: []byte(key), Value: fmt.Appendf(nil, "plain value %d", i),
			Timestamp: base.Add(time.Duration(i) * time.Second), Headers: []kgo.RecordHeader{{Key: "n", Value: fmt.Appendf(nil, "%d", i)}}})
	}
	produce(t, cl, &kgo.Record{Topic: "m", Key: []byte("bin"), Value: []byte{0xff, 0xfe, 0x00, 0x01, 0x80}, Timestamp: base.Add(10 * time.Second)})

	offsets := func(body string) string {
		var out []string
		for _, m := range regexp.MustCompile(`data-offset="(\d+)"`).FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct{ query, want string }{
		{fmt.Sprintf("seek=timestamp&ts=%d&limit=3", base.Add(5*time.Second).UnixMilli()), "5,6,7"},
		{"seek=timestamp&ts=2023-11-14T22:13:28&limit=5", "8,9,10"},
		{fmt.Sprintf("seek=timestamp&ts=%d&limit=3", base.Add(4500*time.Millisecond).UnixMilli()), "5,6,7"},
		{"seek=start&key=admin", "7"},
		{"seek=start&key=user-&limit=3", "0,1,2"},
		{"seek=start&value=value+3", "3"},
		{"seek=start&value=re:value+[24]$", "2,4"},
		{"seek=start&key=user&value=value+7", ""},
		{"seek=end&key=bin", "10"},
	} {
		if got := offsets(s.must("/topics/m/messages?" + tc.query)); got != tc.want {
			t.Errorf("messages?%s: offsets %q, want %q", tc.query, got, tc.want)
		}
	}
	// A timestamp after every record finds none.
	if body := s.must(fmt.Sprintf("/topics/m/messages?seek=timestamp&ts=%d", base.Add(time.Hour).UnixMilli())); !strings.Contains(body, `id="none"`) {
		t.Errorf("a timestamp past the end shows records:\n%s", body)
	}
	// Not UTF-8: hex, also when text is asked for.
	for _, f := range []string{"auto", "text", "hex"} {
		s.must("/topics/m/messages?seek=start&key=bin&format="+f, `<td class="hex"><pre>fffe000180</pre></td>`)
	}
	s.must("/topics/m/messages?seek=start&key=admin", `<td class="text"><pre>plain value 7</pre></td>`, `<span class="hdr">n=7</span>`)

	// CSV export: a header row, then one row a record.
	res, err := s.hc.Get(s.base + "/topics/m/export?as=csv&seek=start&limit=3")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") ||
		!strings.Contains(res.Header.Get("Content-Disposition"), `m.csv`) || res.Header.Get("X-Strata-Truncated") != "false" {
		t.Fatalf("export: %d %v", res.StatusCode, res.Header)
	}
	rows, err := csv.NewReader(res.Body).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"partition", "offset", "timestamp", "key", "value", "headers"},
		{"0", "0", fmt.Sprint(base.UnixMilli()), "user-0", "plain value 0", "n=0"},
		{"0", "1", fmt.Sprint(base.UnixMilli() + 1000), "user-1", "plain value 1", "n=1"},
		{"0", "2", fmt.Sprint(base.UnixMilli() + 2000), "user-2", "plain value 2", "n=2"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Fatalf("CSV export:\n%q\nwant\n%q", rows, want)
	}
	// The export takes the browser's filters.
	_, body := s.get("/topics/m/export?as=csv&seek=start&key=admin")
	if got := strings.Count(body, "\n"); got != 2 || !strings.Contains(body, "0,7,") {
		t.Fatalf("filtered CSV export (%d lines):\n%s", got, body)
	}
}

// partitionOffsets is each partition row's HW, LSO and LEO.
var partitionOffsets = regexp.MustCompile(`<td class="n">([-\d]+)</td><td class="n">([-\d]+)</td><td class="n">([-\d]+)</td>\s*</tr>`)

// TestTopicLSOOpenTransaction: while a transaction is open the topic
// page's LSO stays at its first offset, below the HW; after the commit
// (and its marker) they are equal.
func TestTopicLSOOpenTransaction(t *testing.T) {
	s := startSite(t, nil)
	harness.CreateTopic(t, s.b.Admin(), "tx", 1, nil)
	plain := s.b.Client(kgo.DefaultProduceTopic("tx"))
	produce(t, plain, &kgo.Record{Value: []byte("a")}, &kgo.Record{Value: []byte("b")})
	cl := s.b.Client(kgo.TransactionalID("lso-txn"), kgo.DefaultProduceTopic("tx"))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, &kgo.Record{Value: []byte("t1")}, &kgo.Record{Value: []byte("t2")}, &kgo.Record{Value: []byte("t3")})
	hwLSOLEO := func() string {
		body := s.must("/topics/tx")
		m := partitionOffsets.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no partition row:\n%s", body)
		}
		return m[1] + "/" + m[2] + "/" + m[3]
	}
	if got := hwLSOLEO(); got != "5/2/5" {
		t.Fatalf("open transaction: HW/LSO/LEO %s, want 5/2/5", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// The commit marker is offset 5; the HW follows it once written.
	for deadline := time.Now().Add(20 * time.Second); ; {
		got := hwLSOLEO()
		if got == "6/6/6" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed: HW/LSO/LEO %s, want 6/6/6", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrokersRedactSecrets: a broker's SASL JAAS config (which lists
// PLAIN passwords) shows as redacted on the brokers page, and the
// password appears on no page.
func TestBrokersRedactSecrets(t *testing.T) {
	const secret = "Tr0ub4dor-and-3"
	s, _ := secureSite(t, "sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
		"listener.name.sasl.plain.sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required user_carol="`+secret+`";`)
	allow(t, s, kadm.NewACLs().Clusters().Operations(kadm.OpDescribe, kadm.OpDescribeConfigs))
	body := s.must("/brokers", "listener.name.sasl.plain.sasl.jaas.config", "redacted")
	row := regexp.MustCompile(`<td>listener\.name\.sasl\.plain\.sasl\.jaas\.config</td><td class="v">([^\n]*?)</td>`).FindStringSubmatch(body)
	if row == nil || !strings.Contains(row[1], "redacted") {
		t.Fatalf("the JAAS config row is not redacted: %q", row)
	}
	for _, p := range []string{"/brokers", "/brokers?filter=jaas", "/", "/topics"} {
		if _, body := s.get(p); strings.Contains(body, secret) || strings.Contains(body, "user_carol") {
			t.Fatalf("GET %s shows the secret", p)
		}
	}
}
