package console_test

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// secureSite is a console asking for a login, over a broker with the
// StandardAuthorizer (the plaintext listener's User:ANONYMOUS is a super
// user: the test's admin client) and the SCRAM users alice (who logs in)
// and bob (whose salt the test knows).
func secureSite(t *testing.T, extra ...string) (*site, []byte) {
	t.Helper()
	cfg := map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT",
		"inter.broker.listener.name":     "PLAINTEXT",
		"sasl.enabled.mechanisms":        "SCRAM-SHA-256,SCRAM-SHA-512",
		"authorizer.class.name":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                    "User:ANONYMOUS",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = extra[i+1]
	}
	s := startSite(t, cfg)
	salt := []byte("bob-salt-0123456789-known")
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	res, err := s.b.Admin().AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"},
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 8192, Salt: salt, SaltedPassword: []byte("0123456789abcdef0123456789abcdef")},
	})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	if code, body := s.post("/login", url.Values{"user": {"alice"}, "password": {"alice-secret"}, "next": {"/topics"}}); code != http.StatusOK {
		t.Fatalf("log in: %d %s", code, body)
	}
	return s, salt
}

// allow grants alice the operations on what b names.
func allow(t *testing.T, s *site, b *kadm.ACLBuilder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	res, err := s.b.Admin().CreateACLs(ctx, b.Allow("User:alice").AllowHosts("*").ResourcePatternType(kadm.ACLPatternLiteral))
	if err == nil {
		for _, r := range res {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		t.Fatalf("create ACL: %v", err)
	}
}

func TestSecurityPages(t *testing.T) {
	s, salt := secureSite(t)
	// Without DESCRIBE on the cluster, alice sees none of them.
	for _, p := range []string{"/acls", "/users", "/quotas"} {
		if code, body := s.get(p); code != http.StatusForbidden {
			t.Fatalf("GET %s without DESCRIBE on the cluster: %d %s", p, code, body)
		}
	}
	allow(t, s, kadm.NewACLs().Clusters().Operations(kadm.OpDescribe))
	allow(t, s, kadm.NewACLs().Topics("orders").Operations(kadm.OpRead))
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	name := "batch-jobs"
	qres, err := s.b.Admin().AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &name}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1048576}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: nil}}, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 2048}}},
	})
	if err == nil {
		for _, r := range qres {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		t.Fatalf("alter quotas: %v", err)
	}

	s.must("/acls", "User:alice", "CLUSTER", "kafka-cluster", "DESCRIBE", "ALLOW", "orders", "READ", "LITERAL")
	body := s.must("/acls?filter=orders", "orders")
	if strings.Contains(body, "kafka-cluster") {
		t.Fatalf("filter=orders shows the cluster ACL:\n%s", body)
	}
	body = s.must("/users", "alice", "SCRAM-SHA-512 (4096 iterations)", "bob", "SCRAM-SHA-256 (8192 iterations)")
	for _, secret := range []string{string(salt), hex.EncodeToString(salt), base64.StdEncoding.EncodeToString(salt), "0123456789abcdef"} {
		if strings.Contains(body, secret) {
			t.Fatalf("the users page shows a salt or key %q", secret)
		}
	}
	s.must("/quotas", "batch-jobs", "producer_byte_rate=1048576", "&lt;default&gt;", "consumer_byte_rate=2048")
	s.must("/", `href="/transactions"`, `href="/acls"`, `href="/users"`, `href="/quotas"`)
}

func TestTransactionsPage(t *testing.T) {
	// Timed-out transactions are left open (not rolled back) for the test.
	s, _ := secureSite(t, "transaction.abort.timed.out.transaction.cleanup.interval.ms", "3600000")
	harness.CreateTopic(t, s.b.Admin(), "ledger", 1, nil)
	cl := s.b.Client(kgo.TransactionalID("txn-a"), kgo.DefaultProduceTopic("ledger"))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, &kgo.Record{Value: []byte("v")})
	allow(t, s, kadm.NewACLs().Clusters().Operations(kadm.OpDescribe)) // the overview
	// The open transaction is hidden until alice may describe its id.
	body := s.must("/transactions", "No transactions.")
	if strings.Contains(body, "txn-a") {
		t.Fatalf("a transactional id alice may not describe is shown:\n%s", body)
	}
	allow(t, s, kadm.NewACLs().TransactionalIDs("txn-a").Operations(kadm.OpDescribe))
	// DescribeTransactions leaves out the partitions of topics alice may
	// not describe, as Kafka does.
	allow(t, s, kadm.NewACLs().Topics("ledger").Operations(kadm.OpDescribe))
	s.must("/transactions", "txn-a", "Ongoing", "ledger-0")
	if code, _ := s.get("/transactions?show=bogus"); code != http.StatusBadRequest {
		t.Fatalf("show=bogus: %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// EndTransaction returns once the commit is prepared; the markers,
	// and then CompleteCommit, follow.
	s.waitFor("/transactions?show=all", "CompleteCommit")
	if body := s.must("/transactions"); strings.Contains(body, "txn-a") {
		t.Fatalf("a committed transaction is listed as open:\n%s", body)
	}
	if body := s.must("/transactions?show=hanging"); strings.Contains(body, "txn-a") {
		t.Fatalf("a committed transaction is listed as hanging:\n%s", body)
	}

	// A transaction open past its timeout is hanging.
	hung := s.b.Client(kgo.TransactionalID("txn-h"), kgo.DefaultProduceTopic("ledger"), kgo.TransactionTimeout(100*time.Millisecond))
	if err := hung.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(t, hung, &kgo.Record{Value: []byte("h")})
	allow(t, s, kadm.NewACLs().TransactionalIDs("txn-h").Operations(kadm.OpDescribe))
	body = s.waitFor("/transactions?show=hanging", "txn-h")
	if !strings.Contains(body, `class="warn hanging"`) || strings.Contains(body, "txn-a") {
		t.Fatalf("hanging transactions:\n%s", body)
	}
}

// TestBrowserAdminScreens takes a screenshot of the transactions, ACLs,
// users and quotas screens, reached from the navigation bar.
func TestBrowserAdminScreens(t *testing.T) {
	s, _ := secureSite(t)
	allow(t, s, kadm.NewACLs().Clusters().Operations(kadm.OpDescribe))
	allow(t, s, kadm.NewACLs().TransactionalIDs("*").Operations(kadm.OpDescribe))
	harness.CreateTopic(t, s.b.Admin(), "ledger", 1, nil)
	cl := s.b.Client(kgo.TransactionalID("txn-shot"), kgo.DefaultProduceTopic("ledger"))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, &kgo.Record{Value: []byte("v")})
	br := newBrowser(t)
	br.run("log in", chromedp.Navigate(s.base+"/login?next=/topics"), chromedp.WaitVisible(chromedp.CSS("#login")),
		chromedp.SendKeys(chromedp.CSS("#user"), "alice"), chromedp.SendKeys(chromedp.CSS("#password"), "alice-secret"),
		chromedp.Click(chromedp.CSS("#login")), chromedp.WaitVisible(chromedp.CSS("#topics")))
	for _, screen := range []struct{ link, table, want string }{
		{"Transactions", "#transactions", "txn-shot"},
		{"ACLs", "#acls", "User:alice"},
		{"Users", "#users", "alice"},
		{"Quotas", "#quotas", ""},
	} {
		br.run(screen.link, chromedp.Click(chromedp.Search(`//nav/a[text()="`+screen.link+`"]`)), chromedp.WaitVisible(chromedp.CSS(screen.table)))
		if got := br.text(screen.table); !strings.Contains(got, screen.want) {
			t.Fatalf("%s: no %q in %q", screen.link, screen.want, got)
		}
		br.shot(strings.ToLower(screen.link))
	}
}

// TestListPaging: the ACL, user, quota and transaction lists page, as the
// topic list does, over 120 ACLs, 62 users, 60 quota entities and 25
// transactional ids, and filter.
func TestListPaging(t *testing.T) {
	s, _ := secureSite(t)
	allow(t, s, kadm.NewACLs().Clusters().Operations(kadm.OpDescribe))
	allow(t, s, kadm.NewACLs().TransactionalIDs("*").Operations(kadm.OpDescribe))
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	adm := s.b.Admin()
	var topics []string
	var users []kadm.UpsertSCRAM
	var quotas []kadm.AlterClientQuotaEntry
	for i := range 120 {
		topics = append(topics, fmt.Sprintf("t-%03d", i))
	}
	for i := range 60 {
		users = append(users, kadm.UpsertSCRAM{User: fmt.Sprintf("u-%02d", i), Mechanism: kadm.ScramSha256, Iterations: 4096,
			Salt: []byte("salt-salt-salt-salt"), SaltedPassword: []byte("0123456789abcdef0123456789abcdef")})
		name := fmt.Sprintf("q-%02d", i)
		quotas = append(quotas, kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: &name}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: float64(1024 + i)}}})
	}
	created, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics(topics...).Operations(kadm.OpRead).Allow("User:reader").AllowHosts("*").
		ResourcePatternType(kadm.ACLPatternLiteral))
	for _, r := range created {
		err = cmp.Or(err, r.Err)
	}
	if err != nil {
		t.Fatalf("create ACLs: %v", err)
	}
	scram, err := adm.AlterUserSCRAMs(ctx, nil, users)
	if err = cmp.Or(err, scram.Error()); err != nil {
		t.Fatalf("create users: %v", err)
	}
	altered, err := adm.AlterClientQuotas(ctx, quotas)
	for _, r := range altered {
		err = cmp.Or(err, r.Err)
	}
	if err != nil {
		t.Fatalf("alter quotas: %v", err)
	}
	cl := s.b.Client()
	for i := range 25 {
		id := fmt.Sprintf("tx-%02d", i)
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
		res, err := req.RequestWith(ctx, cl)
		if err = cmp.Or(err, kerr.ErrorForCode(res.ErrorCode)); err != nil {
			t.Fatalf("init producer id %s: %v", id, err)
		}
	}

	for _, c := range []struct {
		path       string // the list, filtered or not
		size       int    // its page size
		total      int    // its rows, over every page
		count      string // #count of page 1
		last       int    // rows on the last page
		filter     string // a filter and what it leaves
		filterRows int
	}{
		{"/acls?", 50, 122, "122 ACL bindings · page <span id=\"page\">1</span> of 3", 22, "t-11", 10},
		{"/users?", 20, 62, "62 users · page <span id=\"page\">1</span> of 4", 2, "u-1", 10},
		{"/quotas?", 50, 60, "60 entities · page <span id=\"page\">1</span> of 2", 10, "q-0", 10},
		{"/transactions?show=all&", 20, 25, "25 transactional ids · page <span id=\"page\">1</span> of 2", 5, "tx-1", 10},
	} {
		pages := (c.total + c.size - 1) / c.size
		seen := map[string]int{}
		path := fmt.Sprintf("%ssize=%d", c.path, c.size)
		for page := 1; page <= pages; page++ {
			body := s.must(path, fmt.Sprintf(`<span id="page">%d</span> of %d`, page, pages))
			if page == 1 && !strings.Contains(body, c.count) {
				t.Fatalf("%s: no %q", path, c.count)
			}
			rows := listRows(body)
			want := c.size
			if page == pages {
				want = c.last
			}
			if len(rows) != want {
				t.Fatalf("%s: %d rows, want %d", path, len(rows), want)
			}
			for _, r := range rows {
				if p, dup := seen[r]; dup {
					t.Fatalf("%s: row %s is on page %d too", path, r, p)
				}
				seen[r] = page
			}
			// The page's next link keeps the list's parameters.
			next := regexp.MustCompile(`id="next" href="([^"]+)"`).FindStringSubmatch(body)
			if page < pages && next == nil || page == pages && next != nil {
				t.Fatalf("%s: next link %q on page %d of %d", path, next, page, pages)
			}
			if next != nil {
				path = html.UnescapeString(next[1])
			}
		}
		if len(seen) != c.total {
			t.Fatalf("%s: %d rows over the pages, want %d", c.path, len(seen), c.total)
		}
		// A page past the end shows the last; the filter narrows.
		if rows := listRows(s.must(fmt.Sprintf("%ssize=%d&page=99", c.path, c.size), fmt.Sprintf(`<span id="page">%d</span>`, pages))); len(rows) != c.last {
			t.Fatalf("%s page 99: %d rows, want %d", c.path, len(rows), c.last)
		}
		body := s.must(c.path+"filter="+c.filter, fmt.Sprintf(`%d `, c.filterRows), `<span id="page">1</span> of 1`)
		rows := listRows(body)
		if len(rows) != c.filterRows {
			t.Fatalf("%s filter %s: %d rows, want %d", c.path, c.filter, len(rows), c.filterRows)
		}
		for _, r := range rows {
			if !strings.Contains(r, c.filter) {
				t.Fatalf("%s filter %s shows %s", c.path, c.filter, r)
			}
		}
		// Bad paging input is a 400 with a message, as on the topic list.
		for q, msg := range map[string]string{"page=abc": `page: "abc" is not a number`, "page=0": "not a page", "size=-1": "size: want one of", "size=100000": "size: want one of"} {
			if code, body := s.get(c.path + q); code != http.StatusBadRequest || !strings.Contains(body, msg) {
				t.Fatalf("%s%s: %d %s", c.path, q, code, body)
			}
		}
	}
	// The users' filter leaves out alice and bob; the ACLs' matches the
	// principal too.
	if rows := listRows(s.must("/users?filter=u-&size=100", "60 users")); len(rows) != 60 || slices.ContainsFunc(rows, func(r string) bool { return strings.Contains(r, "alice") }) {
		t.Fatalf("users filter u-: %d rows %q", len(rows), rows)
	}
	s.must("/acls?filter=User:alice&size=100", "2 of 122 ACL bindings", "kafka-cluster")
}

var listRow = regexp.MustCompile(`(?s)<tr[^>]*>(<td.*?)</tr>`)

// listRows is the data rows of a list page's table.
func listRows(body string) []string {
	var rows []string
	for _, m := range listRow.FindAllStringSubmatch(body, -1) {
		rows = append(rows, m[1])
	}
	return rows
}
