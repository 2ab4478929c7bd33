package console

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/memstore"
)

// bigCluster is a console over generated metadata: topics topics of
// parts partitions each, led by brokers 1 to 3 (this broker is 1), and
// no logs: the pages' cost is the metadata's.
func bigCluster(tb testing.TB, topics, parts int) *Server {
	tb.Helper()
	return generatedCluster(tb, topics, parts, 0)
}

// generatedCluster is bigCluster whose first local topics are led by
// this broker alone and, with __consumer_offsets, have real logs holding
// records and committed offsets (withLogs).
func generatedCluster(tb testing.TB, topics, parts, local int) *Server {
	tb.Helper()
	cfg, err := config.Parse(map[string]string{"node.id": "1", "log.dirs": tb.TempDir(), "metrics.listener": ""})
	if err != nil {
		tb.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	cache := metadata.NewCache()
	var changes []metadata.Change
	for id := int32(1); id <= 3; id++ {
		changes = append(changes, metadata.Change{Kind: metadata.ChangeBroker, Broker: metadata.Broker{ID: id, Host: "127.0.0.1", Port: 9090 + id}})
	}
	for i := range topics {
		name := fmt.Sprintf("topic-%05d", i)
		var id metadata.TopicID
		copy(id[:], fmt.Sprintf("%016d", i))
		changes = append(changes, metadata.Change{Kind: metadata.ChangeTopic, Topic: name, ID: id, Configs: map[string]string{}})
		for p := range parts {
			leader := int32((i+p)%3 + 1)
			replicas := []int32{leader, leader%3 + 1, (leader+1)%3 + 1}
			isr := replicas
			if (i+p)%97 == 0 {
				isr = replicas[:2]
			}
			st := metadata.PartitionState{Replicas: replicas, ISR: isr, Leader: leader, LeaderEpoch: 1}
			if i < local {
				st = localState
			}
			changes = append(changes, metadata.Change{Kind: metadata.ChangePartition, Topic: name, Partition: int32(p), State: st})
		}
	}
	if local > 0 {
		changes = append(changes, offsetsTopic(cfg.OffsetsTopicNumPartitions)...)
	}
	cache.Load(1, changes)
	live := config.NewLive(cfg)
	parts2, err := partition.NewManager(live, cache, log)
	if err != nil {
		tb.Fatal(err)
	}
	store := memstore.NewBackend().Open()
	tb.Cleanup(func() { _ = store.Close(); _ = parts2.Close() })
	env := &handler.Env{Cfg: live, Store: store, Cache: cache, Partitions: parts2, Groups: group.New(group.ConfigFrom(cfg), log),
		Log: log, Metrics: handler.NewMetrics(prometheus.NewRegistry()), Self: metadata.Broker{ID: 1, Host: "127.0.0.1", Port: 9091}}
	if local > 0 {
		withLogs(tb, env, changes)
	}
	s, err := New(Options{Env: func() *handler.Env { return env }, ReadOnly: true, Log: log})
	if err != nil {
		tb.Fatal(err)
	}
	// Every topic is consumed by three groups: the lag index as it would
	// be built, kept for the test's length.
	lags := map[string][]groupLag{}
	for i := range topics {
		for g := range 3 {
			name := fmt.Sprintf("topic-%05d", i)
			lags[name] = append(lags[name], groupLag{Group: fmt.Sprintf("group-%d", g), Lag: int64(i * (g + 1))})
		}
	}
	s.lags.set(lags, time.Hour)
	s.tier.set(generatedTierView(cache), time.Hour)
	return s
}

// benchPages are the pages the benchmark renders.
var benchPages = []string{
	"/",
	"/topics",
	"/topics?page=150&size=50",
	"/topics?filter=topic-09&sort=partitions&order=desc",
	"/topics?sort=urp&order=desc&size=500",
	"/topics?sort=lag&order=desc",
	"/topics/topic-04321",
	"/brokers",
	"/groups",
	"/groups/group-00001",
	"/groups/" + bigGroup,
	"/groups/" + bigGroup + "?sort=lag",
	"/topics/" + messagesTopic + "/messages",
	"/topics/" + messagesTopic + "/messages?partition=3&seek=start&limit=500",
	"/topics/" + messagesTopic + "/messages?partition=3&seek=start&value=no-such-value",
	"/transactions",
	"/acls",
	"/users",
	"/quotas",
}

func get(tb testing.TB, s *Server, path string) {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		tb.Fatalf("GET %s: %d %s", path, w.Code, w.Body.String())
	}
}

// BenchmarkPages renders each page over 10,000 topics of 10 partitions
// (100,000 partitions), the groups' and messages' over real logs
// (generatedCluster).
func BenchmarkPages(b *testing.B) {
	s := generatedCluster(b, 10_000, 10, localTopics(b, 10))
	for _, path := range benchPages {
		b.Run(strings.NewReplacer("/", "_", "?", "_", "&", "_", "=", "-").Replace(path), func(b *testing.B) {
			for b.Loop() {
				get(b, s, path)
			}
		})
	}
}

// TestPagesAtScale renders each page once over the large metadata set,
// to keep the benchmark's set-up and pages working; the times are in
// doc/perf.md from BenchmarkPages, not asserted here.
func TestPagesAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 100,000 partitions of metadata")
	}
	s := generatedCluster(t, 10_000, 10, localTopics(t, 10))
	for _, path := range benchPages {
		start := time.Now()
		get(t, s, path)
		t.Logf("%s: %v", path, time.Since(start))
	}
	// The groups' and messages' pages show what withLogs wrote.
	for path, want := range map[string]string{
		"/groups":                                "group-00999",
		"/groups/" + bigGroup:                    "topic-00999-9",
		"/topics/" + messagesTopic + "/messages": "key-9999",
		"/topics/" + messagesTopic + "/messages?partition=3&seek=start&value=no-such-value": "10000 records scanned",
	} {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("GET %s: no %q in the page", path, want)
		}
	}
}

// denyTopic is an authorizer that refuses one principal every operation
// on one topic.
type denyTopic struct{ principal, topic string }

func (d denyTopic) Authorize(a handler.Action) bool {
	return !(a.Principal == d.principal && a.Name == d.topic)
}

// TestPrincipalAppliesToPages: the session's principal goes to the
// broker's authorizer for every page's data: a topic its ACLs hide is
// neither listed nor shown, for that principal only.
func TestPrincipalAppliesToPages(t *testing.T) {
	s := bigCluster(t, 20, 2)
	env := s.o.Env()
	env.Authorizer = denyTopic{principal: "User:bob", topic: "topic-00003"}
	s.o.Login = true
	as := func(principal, path string) (int, string) {
		w := httptest.NewRecorder()
		s.sessions.create(w, principal)
		r := httptest.NewRequest(http.MethodGet, path, nil)
		for _, c := range w.Result().Cookies() {
			r.AddCookie(c)
		}
		w = httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	if _, body := as("User:alice", "/topics"); !strings.Contains(body, "topic-00003") {
		t.Fatal("alice does not see topic-00003")
	}
	if _, body := as("User:bob", "/topics"); strings.Contains(body, "topic-00003") || !strings.Contains(body, "topic-00004") {
		t.Fatalf("bob's topic list:\n%s", body)
	}
	if code, _ := as("User:bob", "/topics/topic-00003"); code != http.StatusNotFound {
		t.Fatalf("bob's view of topic-00003: %d", code)
	}
	if code, _ := as("User:bob", "/topics/topic-00003/messages"); code != http.StatusNotFound {
		t.Fatalf("bob's messages of topic-00003: %d", code)
	}
	// Without a session, a login is asked for.
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/topics", nil))
	if w.Code != http.StatusSeeOther || !strings.HasPrefix(w.Header().Get("Location"), "/login") {
		t.Fatalf("no session: %d %v", w.Code, w.Header())
	}
}

// TestCrossSitePostRefused: a POST another site's page sends is refused
// before it reaches a form, the login included.
func TestCrossSitePostRefused(t *testing.T) {
	s := bigCluster(t, 1, 1)
	for _, h := range []map[string]string{{"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}, {"Origin": "null"}} {
		r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader("user=a&password=b"))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range h {
			r.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusForbidden {
			t.Errorf("POST with %v: %d", h, w.Code)
		}
	}
}

// generatedTierView is a tier view of every partition of cache on each
// of its replicas, as the three brokers would report it: every replica
// holds local bytes, and the leader reports the tiered bytes.
func generatedTierView(cache *metadata.Cache) *tierView {
	v := newTierView()
	v.answered = map[int32]bool{1: true, 2: true, 3: true}
	for _, t := range cache.Topics() {
		for i, p := range t.Partitions {
			for _, id := range p.Replicas {
				v.topics[t.Name] = append(v.topics[t.Name], replicaState{Partition: i, Broker: id, Bytes: int64(len(t.Name)+int(i)) << 20,
					Tier: handler.ReplicaTier{Leader: id == p.Leader, Tiered: true, RemoteStart: 0, RemoteEnd: 999, RemoteBytes: int64(i) << 30}})
			}
		}
	}
	v.summarize()
	return v
}

// BenchmarkTierView gathers a tier view from three brokers' answers of
// 100,000 partitions each (10,000 topics of 10, replication 3), as the
// peer client hands them over: decoded from the wire, then summed. The
// overview and the topic list pay this at most once per tierTTL.
func BenchmarkTierView(b *testing.B) {
	var wire [3][]byte
	for id := range int32(3) {
		res := kmsg.NewPtrDescribeLogDirsResponse()
		res.Version = 4
		dir := kmsg.NewDescribeLogDirsResponseDir()
		var tiers []byte
		for i := range 10_000 {
			dt := kmsg.NewDescribeLogDirsResponseDirTopic()
			dt.Topic = fmt.Sprintf("topic-%05d", i)
			for p := range int32(10) {
				dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
				dp.Partition, dp.Size = p, int64(i)<<20
				tiers = handler.ReplicaTier{Leader: (int32(i)+p)%3 == id, Tiered: true, RemoteEnd: 999, RemoteBytes: int64(p) << 30}.AppendTo(tiers)
				dt.Partitions = append(dt.Partitions, dp)
			}
			dir.Topics = append(dir.Topics, dt)
		}
		dir.UnknownTags.Set(handler.TierTag, tiers)
		res.Dirs = append(res.Dirs, dir)
		wire[id] = res.AppendTo(nil)
	}
	b.ReportAllocs()
	for b.Loop() {
		v := newTierView()
		for id, w := range wire {
			res := kmsg.NewPtrDescribeLogDirsResponse()
			res.Version = 4
			if err := res.ReadFrom(w); err != nil {
				b.Fatal(err)
			}
			v.add(int32(id), res)
		}
		v.summarize()
	}
}
