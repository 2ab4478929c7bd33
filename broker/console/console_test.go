package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// site is a broker with its console, and a browser-like HTTP client
// (cookies kept, redirects followed).
type site struct {
	t    *testing.T
	b    *harness.Broker
	base string
	hc   *http.Client
	csrf string
}

func startSite(t *testing.T, overrides map[string]string) *site {
	t.Helper()
	cfg := map[string]string{"console.listener": "127.0.0.1:0", "console.read.only": "false"}
	for k, v := range overrides {
		cfg[k] = v
	}
	b := harness.Start(t, cfg)
	jar, _ := cookiejar.New(nil)
	return &site{t: t, b: b, base: "http://" + b.Server().ConsoleAddr(), hc: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// startCluster starts brokers 1 to n on one etcd, each a site with the
// keys more adds for its node (more may be nil).
func startCluster(t *testing.T, n int, more func(node int) map[string]string) []*site {
	t.Helper()
	etcd := harness.StartEtcd(t)
	sites := make([]*site, 0, n)
	for node := 1; node <= n; node++ {
		cfg := map[string]string{"node.id": fmt.Sprint(node), "metadata.etcd.endpoints": etcd.Endpoint()}
		if more != nil {
			maps.Copy(cfg, more(node))
		}
		sites = append(sites, startSite(t, cfg))
	}
	return sites
}

var csrfField = regexp.MustCompile(`"X-CSRF-Token": "([^"]+)"`)

// get fetches path and returns the status and body; it remembers the
// page's CSRF token.
func (s *site) get(path string) (int, string) {
	s.t.Helper()
	res, err := s.hc.Get(s.base + path)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if m := csrfField.FindSubmatch(body); m != nil {
		s.csrf = string(m[1])
	}
	return res.StatusCode, string(body)
}

// post sends form to path with the CSRF token (unless form sets csrf).
func (s *site) post(path string, form url.Values) (int, string) {
	s.t.Helper()
	if form.Get("csrf") == "" && s.csrf != "" {
		form.Set("csrf", s.csrf)
	}
	res, err := s.hc.PostForm(s.base+path, form)
	if err != nil {
		s.t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

func (s *site) must(path string, want ...string) string {
	s.t.Helper()
	code, body := s.get(path)
	if code != http.StatusOK {
		s.t.Fatalf("GET %s: %d %s", path, code, body)
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			s.t.Fatalf("GET %s: no %q in\n%s", path, w, body)
		}
	}
	return body
}

func produce(t *testing.T, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func TestPages(t *testing.T) {
	s := startSite(t, nil)
	harness.CreateTopic(t, s.b.Admin(), "orders", 3, nil)
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 20 {
		produce(t, cl, &kgo.Record{Topic: "orders", Partition: int32(i % 3), Key: fmt.Appendf(nil, "k%d", i),
			Value: fmt.Appendf(nil, `{"n":%d}`, i), Headers: []kgo.RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "t-%d", i)}}})
	}
	s.must("/", "Cluster id", "controller")
	s.must("/topics", "orders")
	s.must("/topics/orders", "partitions", "retention.ms")
	s.must("/brokers", "log.dirs", "node.id")
	body := s.must("/topics/orders/messages?seek=start&header=trace%3Dt-7", "t-7", "&#34;n&#34;: 7")
	if strings.Count(body, `class="record"`) != 1 {
		t.Fatalf("header filter: want one record, got\n%s", body)
	}
	s.must("/topics/orders/messages?seek=offset&partition=1&offset=2&limit=2", `data-offset="2"`, `data-offset="3"`)

	// Export as JSON.
	_, exp := s.get("/topics/orders/export?as=json&seek=start&limit=100")
	var recs []map[string]any
	if err := json.Unmarshal([]byte(exp), &recs); err != nil || len(recs) != 20 {
		t.Fatalf("export: %d records, %v\n%s", len(recs), err, exp)
	}

	// Bad input: 4xx with a message.
	for path, code := range map[string]int{
		"/topics/nope":          404,
		"/topics/nope/messages": 404,
		"/topics/orders/messages?seek=offset&offset=999": 400,
		"/topics/orders/messages?key=re:(":               400,
		"/topics?sort=bogus":                             400,
		"/topics/orders/export?as=xml":                   400,
	} {
		if got, body := s.get(path); got != code {
			t.Errorf("GET %s: %d, want %d: %s", path, got, code, body)
		}
	}
	// A POST without the CSRF token is refused.
	res, err := s.hc.PostForm(s.base+"/topics", url.Values{"name": {"x"}})
	if err != nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("POST without CSRF: %v %v", res.StatusCode, err)
	}
	res.Body.Close()
	// A 10 MB produce form is 413.
	if code, body := s.post("/topics/orders/produce", url.Values{"value": {strings.Repeat("x", 10<<20)}}); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("10 MB produce: %d %s", code, body)
	}
	// Produce from the form, then the broker still serves.
	if code, body := s.post("/topics/orders/produce", url.Values{"partition": {"2"}, "key": {"form"}, "value": {"from the form"}, "headers": {"src=console"}}); code != 200 || !strings.Contains(body, "Produced") {
		t.Fatalf("produce: %d %s", code, body)
	}
	s.must("/topics/orders/messages?header=src%3Dconsole", "from the form")
	// Edit a config: the topic's source shows it, and back.
	if code, body := s.post("/topics/orders/config", url.Values{"name": {"retention.ms"}, "value": {"123456"}, "op": {"set"}}); code != 200 || !strings.Contains(body, "123456") {
		t.Fatalf("set config: %d %s", code, body)
	}
	if code, body := s.post("/topics/orders/config", url.Values{"name": {"retention.ms"}, "value": {"-7"}, "op": {"set"}}); code != 400 {
		t.Fatalf("bad config value: %d %s", code, body)
	}
	if code, body := s.post("/topics/orders/config", url.Values{"name": {"retention.ms"}, "op": {"delete"}}); code != 200 || strings.Contains(body, "123456") {
		t.Fatalf("delete config: %d %s", code, body)
	}
	// Create and delete a topic.
	if code, body := s.post("/topics", url.Values{"name": {"made-here"}, "partitions": {"2"}}); code != 200 || !strings.Contains(body, "made-here") {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, body := s.post("/topics/made-here/delete", url.Values{"confirm": {"made-here"}}); code != 200 {
		t.Fatalf("delete: %d %s", code, body)
	}
}

func TestReadOnly(t *testing.T) {
	s := startSite(t, map[string]string{"console.read.only": "true"})
	harness.CreateTopic(t, s.b.Admin(), "ro", 1, nil)
	body := s.must("/topics/ro/messages", "read-only")
	if strings.Contains(body, "Produce a record") {
		t.Fatal("read-only console shows the produce form")
	}
	if code, _ := s.post("/topics/ro/produce", url.Values{"value": {"x"}}); code != http.StatusForbidden {
		t.Fatalf("produce in read-only mode: %d", code)
	}
	if code, _ := s.post("/topics", url.Values{"name": {"x"}}); code != http.StatusForbidden {
		t.Fatalf("create in read-only mode: %d", code)
	}
}

// waitFor polls path until it contains want, for at most 30 s.
func (s *site) waitFor(path, want string) string {
	s.t.Helper()
	return s.waitForMatch(path, regexp.MustCompile(regexp.QuoteMeta(want)))
}

func TestGroupLagAndReset(t *testing.T) {
	s := startSite(t, nil)
	harness.CreateTopic(t, s.b.Admin(), "events", 2, nil)
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		produce(t, cl, &kgo.Record{Topic: "events", Partition: int32(i % 2), Value: []byte("v")})
	}
	consumer := s.b.Client(kgo.ConsumerGroup("readers"), kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	consumeAll(t, consumer, 10)
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	s.waitFor("/groups/readers", `<dd id="total-lag">0</dd>`)
	s.must("/groups/readers", `<td>events-0</td>`, `<td>events-1</td>`)
	s.must("/groups", "readers")
	consumer.Close()
	s.waitFor("/groups/readers", `<dd id="state">Empty</dd>`)
	// The first POST previews; only the confirmation commits.
	code, body := s.post("/groups/readers/reset", url.Values{"to": {"earliest"}})
	if code != 200 || !strings.Contains(body, "Confirm reset") {
		t.Fatalf("reset preview: %d %s", code, body)
	}
	s.must("/groups/readers", `<dd id="total-lag">0</dd>`)
	code, body = s.post("/groups/readers/reset", url.Values{"to": {"earliest"}, "confirm": {"yes"}})
	if code != 200 || !strings.Contains(body, `<dd id="total-lag">10</dd>`) {
		t.Fatalf("reset: %d %s", code, body)
	}
}

// TestClusterView: broker 1's console shows what broker 2 knows, asked
// over the inter-broker connection: the records and offsets of the
// partitions broker 2 leads, its configuration, and its log bytes.
func TestClusterView(t *testing.T) {
	sites := startCluster(t, 2, nil)
	s := sites[0]
	s.waitFor("/", "<td>2</td>")
	harness.CreateTopic(t, s.b.Admin(), "spread", 4, map[string]string{})
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(4) {
		produce(t, cl, &kgo.Record{Topic: "spread", Partition: p, Value: fmt.Appendf(nil, "in-%d", p),
			Headers: []kgo.RecordHeader{{Key: "p", Value: fmt.Appendf(nil, "%d", p)}}})
	}
	// The offsets of broker 2's partitions come from its ListOffsets.
	body := s.must("/topics/spread", "Records (HW − log start)</dt><dd>4</dd>")
	if strings.Contains(body, `colspan="11" class="err"`) {
		t.Fatalf("topic page: a leader did not answer:\n%s", body)
	}
	if !regexp.MustCompile(`<tr >\s*<td>\d</td><td>2</td>`).MatchString(body) {
		t.Fatalf("broker 2 leads no partition of the topic:\n%s", body)
	}
	// Every partition's record is found, whichever broker leads it.
	body = s.must("/topics/spread/messages?seek=start", "in-0", "in-1", "in-2", "in-3")
	if n := strings.Count(body, `class="record"`); n != 4 {
		t.Fatalf("%d records, want 4", n)
	}
	s.must("/brokers?id=2", "node.id", ">2<")
	s.must("/", "<td>2</td>")
}
