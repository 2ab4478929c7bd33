package console_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/test/harness"
)

// TestConsoleConfigDefaults: the console listens on 127.0.0.1:9645 and
// is read-only unless told otherwise.
func TestConsoleConfigDefaults(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConsoleListener != "127.0.0.1:9645" || !cfg.ConsoleReadOnly {
		t.Fatalf("console.listener %q, console.read.only %v; want 127.0.0.1:9645, true", cfg.ConsoleListener, cfg.ConsoleReadOnly)
	}
	if cfg, err = config.Parse(map[string]string{"log.dirs": t.TempDir(), "console.listener": "", "console.read.only": "false"}); err != nil {
		t.Fatal(err)
	}
	if cfg.ConsoleListener != "" || cfg.ConsoleReadOnly {
		t.Fatalf("set: console.listener %q, console.read.only %v", cfg.ConsoleListener, cfg.ConsoleReadOnly)
	}
}

// TestReadOnlyDefaultRefusesActions: a console started without
// console.read.only refuses every state change with 403 and says why,
// and nothing changes.
func TestReadOnlyDefaultRefusesActions(t *testing.T) {
	b := harness.Start(t, map[string]string{"console.listener": "127.0.0.1:0"}) // console.read.only left at its default
	jar, _ := cookiejar.New(nil)
	s := &site{t: t, b: b, base: "http://" + b.Server().ConsoleAddr(), hc: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	adm := b.Admin()
	harness.CreateTopic(t, adm, "x", 1, nil)
	commitOffsets(t, adm, "g", map[string]map[int32]int64{"x": {0: 0}})
	s.must("/groups/g", `id="reset-disabled"`) // and a CSRF token
	for _, tc := range []struct {
		path string
		form url.Values
	}{
		{"/groups/g/reset", url.Values{"to": {"latest"}, "confirm": {"yes"}}},
		{"/topics/x/config", url.Values{"name": {"retention.ms"}, "value": {"1000"}, "op": {"set"}}},
		{"/topics/x/delete", url.Values{"confirm": {"x"}}},
		{"/topics/x/produce", url.Values{"value": {"v"}}},
		{"/topics", url.Values{"name": {"y"}, "partitions": {"1"}}},
	} {
		if code, body := s.post(tc.path, tc.form); code != http.StatusForbidden || !strings.Contains(body, "console.read.only=true") {
			t.Errorf("POST %s: %d %q, want 403 naming console.read.only", tc.path, code, body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	td, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !td.Has("x") || td.Has("y") {
		t.Fatalf("topics after the refused actions: %v", td.Names())
	}
	if _, body := s.get("/topics/x"); !strings.Contains(body, "Records (HW − log start)</dt><dd>0</dd>") {
		t.Fatal("a record was produced in read-only mode")
	}
	s.must("/topics/x", "retention.ms", "604800000")
}

// TestActionsNeedACLs: a logged-in user may produce, create, delete,
// alter and reset only with the ACLs Kafka asks for those requests;
// without them each is refused with 403 naming the authorization, and
// allowed once granted.
func TestActionsNeedACLs(t *testing.T) {
	s, _ := secureSite(t) // console.read.only=false, alice logged in
	adm := s.b.Admin()
	harness.CreateTopic(t, adm, "acl-t", 1, nil)
	cl := s.b.Client()
	produce(t, cl, &kgo.Record{Topic: "acl-t", Value: []byte("v")})
	commitOffsets(t, adm, "acl-g", map[string]map[int32]int64{"acl-t": {0: 0}})
	// alice may see the topic and the group, and nothing more.
	allow(t, s, kadm.NewACLs().Topics("acl-t").Operations(kadm.OpDescribe))
	allow(t, s, kadm.NewACLs().Groups("acl-g").Operations(kadm.OpDescribe))
	s.must("/topics/acl-t")

	refused := func(what, path string, form url.Values, want string) {
		t.Helper()
		code, body := s.post(path, form)
		if code != http.StatusForbidden || !strings.Contains(strings.ToLower(body), want) {
			t.Fatalf("%s without the ACL: %d %q, want 403 naming %q", what, code, body, want)
		}
	}
	produceForm := url.Values{"value": {"from alice"}}
	refused("produce", "/topics/acl-t/produce", produceForm, "not authorized")
	refused("create", "/topics", url.Values{"name": {"alice-made"}, "partitions": {"1"}}, "authoriz")
	refused("delete", "/topics/acl-t/delete", url.Values{"confirm": {"acl-t"}}, "authoriz")
	refused("alter config", "/topics/acl-t/config", url.Values{"name": {"retention.ms"}, "value": {"1000"}, "op": {"set"}}, "authoriz")
	refused("reset", "/groups/acl-g/reset", url.Values{"to": {"latest"}}, "not authorized")
	// The group READ alone does not do: the reset also reads the topic.
	allow(t, s, kadm.NewACLs().Groups("acl-g").Operations(kadm.OpRead))
	refused("reset without topic READ", "/groups/acl-g/reset", url.Values{"to": {"latest"}}, "not authorized")

	// Nothing changed.
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	if td, err := adm.ListTopics(ctx); err != nil || !td.Has("acl-t") || td.Has("alice-made") {
		t.Fatalf("topics after the refusals: %v %v", td.Names(), err)
	}
	if got := committed(t, adm, "acl-g", "acl-t"); got != "0:0" {
		t.Fatalf("offsets after the refused reset: %s", got)
	}

	// Granted, each goes through.
	allow(t, s, kadm.NewACLs().Topics("acl-t").Operations(kadm.OpWrite, kadm.OpRead, kadm.OpAlterConfigs, kadm.OpDelete))
	allow(t, s, kadm.NewACLs().Topics("alice-made").Operations(kadm.OpCreate, kadm.OpDescribe))
	if code, body := s.post("/topics/acl-t/produce", produceForm); code != http.StatusOK || !strings.Contains(body, "Produced") {
		t.Fatalf("produce with WRITE: %d %s", code, body)
	}
	if code, body := s.post("/groups/acl-g/reset", url.Values{"to": {"latest"}, "confirm": {"yes"}}); code != http.StatusOK || !strings.Contains(body, `<dd id="total-lag">0</dd>`) {
		t.Fatalf("reset with READ: %d %s", code, body)
	}
	if got := committed(t, adm, "acl-g", "acl-t"); got != "0:2" {
		t.Fatalf("offsets after the reset: %s", got)
	}
	if code, body := s.post("/topics/acl-t/config", url.Values{"name": {"retention.ms"}, "value": {"123456"}, "op": {"set"}}); code != http.StatusOK || !strings.Contains(body, "123456") {
		t.Fatalf("alter config with ALTER_CONFIGS: %d %s", code, body)
	}
	if code, body := s.post("/topics", url.Values{"name": {"alice-made"}, "partitions": {"1"}}); code != http.StatusOK || !strings.Contains(body, "alice-made") {
		t.Fatalf("create with CREATE: %d %s", code, body)
	}
	if code, body := s.post("/topics/acl-t/delete", url.Values{"confirm": {"acl-t"}}); code != http.StatusOK {
		t.Fatalf("delete with DELETE: %d %s", code, body)
	}
}

// TestBadInputAnswers: each bad request gets a 4xx whose body names
// the problem, and the broker still serves produce and fetch after
// them, from the console and from a Kafka client.
func TestBadInputAnswers(t *testing.T) {
	s := startSite(t, nil)
	harness.CreateTopic(t, s.b.Admin(), "orders", 2, nil)
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 4 {
		produce(t, cl, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Value: []byte("v")})
	}
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/topics/orders/messages?key=re:(", 400, `key filter "re:(" does not compile`},
		{"/topics/orders/messages?value=re:[a-", 400, `value filter "re:[a-" does not compile`},
		{"/topics/orders/messages?header=re:*x", 400, `header filter "re:*x" does not compile`},
		{"/topics/orders/export?as=csv&value=re:(", 400, "does not compile"},
		{"/topics/orders/messages?seek=offset&offset=999", 400, "offset 999, high watermark 2: offset past the end"},
		{"/topics/orders/messages?seek=offset&partition=1&offset=3", 400, "orders-1: offset 3, high watermark 2"},
		{"/topics/orders/messages?seek=offset&offset=-1", 400, "offset: -1 is negative"},
		{"/topics/orders/messages?partition=7", 400, `topic "orders" has partitions 0 to 1`},
		{"/topics/orders/messages?seek=timestamp&ts=noon", 400, `timestamp "noon"`},
		{"/topics/orders/messages?limit=100000", 400, "limit: want 1 to 500"},
		{"/topics/orders/messages?seek=sideways", 400, "seek: want start, end, offset or timestamp"},
		{"/topics/nope", 404, `topic "nope" does not exist`},
		{"/topics/nope/messages", 404, `topic "nope" does not exist`},
		{"/topics/nope/export?as=json", 404, `topic "nope" does not exist`},
	} {
		code, body := s.get(tc.path)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d %q, want %d naming %q", tc.path, code, body, tc.code, tc.want)
		}
	}
	s.must("/topics") // a CSRF token
	for _, tc := range []struct {
		path string
		form url.Values
		code int
		want string
	}{
		{"/topics/nope/produce", url.Values{"value": {"v"}}, 404, `topic "nope" does not exist`},
		{"/topics/orders/produce", url.Values{"value": {strings.Repeat("x", 10<<20)}}, 413, "larger than 1048576 bytes"},
		{"/topics/orders/produce", url.Values{"partition": {"9"}, "value": {"v"}}, 400, `topic "orders" has partitions 0 to 1`},
		{"/topics", url.Values{"name": {"orders"}}, 409, "already exists"},
		{"/topics", url.Values{"name": {"bad name!"}}, 400, "bad name!"},
		{"/topics/orders/delete", url.Values{"confirm": {"other"}}, 400, `type the topic's name "orders"`},
		{"/topics/orders/config", url.Values{"name": {"retention.ms"}, "value": {"soon"}, "op": {"set"}}, 400, "retention.ms"},
		{"/topics/orders/config", url.Values{"name": {"retention.ms"}, "op": {"toggle"}}, 400, "op: want set or delete"},
	} {
		code, body := s.post(tc.path, tc.form)
		if code != tc.code || !strings.Contains(body, tc.want) {
			if len(body) > 300 {
				body = body[:300]
			}
			t.Errorf("POST %s: %d %q, want %d naming %q", tc.path, code, body, tc.code, tc.want)
		}
	}

	// The broker is unaffected: the form produces, the browser finds it,
	// and a Kafka client produces and reads.
	if code, body := s.post("/topics/orders/produce", url.Values{"partition": {"1"}, "value": {"after the bad input"}}); code != http.StatusOK || !strings.Contains(body, "at offset 2") {
		t.Fatalf("produce after bad input: %d %s", code, body)
	}
	s.must("/topics/orders/messages?seek=offset&partition=1&offset=2", "after the bad input")
	produce(t, cl, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("client after")})
	recs := harness.ReadAll(t, s.b.Addr(), "orders")
	if n := len(recs[0]) + len(recs[1]); n != 6 || string(recs[0][2].Value) != "client after" || string(recs[1][2].Value) != "after the bad input" {
		t.Fatalf("read back %d records: %v", n, recs)
	}
}
