package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// stepWait bounds one step of a browser test.
const stepWait = 30 * time.Second

// browser is a headless Chromium (Debian's chromium, installed by
// scripts/install-test-deps.sh) driven over the DevTools protocol.
type browser struct {
	t   *testing.T
	ctx context.Context
	dir string // screenshots: the test's artifact directory (go test -artifacts keeps it)
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (scripts/install-test-deps.sh installs it)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx, dir: t.ArtifactDir()}
}

// run runs actions, failing the test (with a screenshot) on an error.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepWait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		html, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
		b.t.Fatalf("%s: %v\npage:\n%s", what, err, html)
	}
}

// shot saves a full-page screenshot as name.jpg in the artifact directory.
func (b *browser) shot(name string) string {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(80))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	p := filepath.Join(b.dir, name+".jpg") // FullScreenshot below 100 is a JPEG
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatalf("save screenshot: %v", err)
	}
	b.t.Logf("screenshot %s", p)
	return p
}

// text is the text of the first node sel matches.
func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.shot("failed-read")
		b.t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

// oneRecord waits until the message browser's URL names filter param
// and the page shows one record.
func (b *browser) oneRecord(param string) {
	b.t.Helper()
	for deadline := time.Now().Add(stepWait); ; {
		n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](fmt.Sprintf(`location.search.includes(%q) ? document.querySelectorAll("#rows tr.record").length : -1`, param+"=")))
		if err != nil {
			b.t.Fatal(err)
		}
		if n == 1 {
			return
		}
		if time.Now().After(deadline) {
			b.shot("failed-" + param + "-search")
			b.t.Fatalf("%s filter shows %d records, want 1", param, n)
		}
	}
}

func TestBrowserTopicsAndMessages(t *testing.T) {
	s := startSite(t, nil)
	adm := s.b.Admin()
	names := make([]string, 120)
	for i := range names {
		names[i] = fmt.Sprintf("t%03d", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, names...); err != nil {
		t.Fatal(err)
	}
	harness.CreateTopic(t, adm, "orders", 2, nil)
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 30 {
		produce(t, cl, &kgo.Record{Topic: "orders", Partition: int32(i % 2), Key: fmt.Appendf(nil, "order-%d", i),
			Value: fmt.Appendf(nil, `{"id":%d,"item":"widget"}`, i), Headers: []kgo.RecordHeader{{Key: "trace", Value: fmt.Appendf(nil, "t-%d", i)}}})
	}
	br := newBrowser(t)

	// Overview and brokers.
	br.run("overview", chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(chromedp.CSS("#brokers")))
	br.shot("overview")
	br.run("brokers", chromedp.Navigate(s.base+"/brokers"), chromedp.WaitVisible(chromedp.CSS("#configs")))
	br.shot("brokers")

	// Topic list paging: 121 topics, 50 a page.
	br.run("topics", chromedp.Navigate(s.base+"/topics?size=50"), chromedp.WaitVisible(chromedp.CSS("#topics")))
	if got := br.text("#count"); !strings.Contains(got, "121 topics") || !strings.Contains(got, "page 1 of 3") {
		t.Fatalf("topic count: %q", got)
	}
	br.shot("topics")
	br.run("next page", chromedp.Click(chromedp.CSS("#next")), chromedp.WaitVisible(chromedp.Search(`//span[@id="page" and text()="2"]`)))
	first := br.text("#topics tr:nth-child(2) td a")
	if first != "t049" { // "orders" sorts after the t0xx names... and before: o < t
		t.Fatalf("page 2 starts with %q, want t049", first)
	}
	br.run("filter", chromedp.SendKeys(chromedp.CSS("#filter"), "t11"),
		chromedp.WaitVisible(chromedp.Search(`//p[@id="count" and contains(., "10 topics")]`)))

	// Topic detail.
	br.run("topic", chromedp.Navigate(s.base+"/topics/orders"), chromedp.WaitVisible(chromedp.CSS("#partitions")))
	br.shot("topic")

	// The message browser finds a record by a header.
	br.run("messages", chromedp.Navigate(s.base+"/topics/orders/messages"), chromedp.WaitVisible(chromedp.CSS("#messages")))
	br.run("search by header",
		chromedp.SetValue(chromedp.CSS("#seek"), "start"),
		chromedp.SendKeys(chromedp.CSS("#header"), "trace=t-17"),
		chromedp.Click(chromedp.CSS("#search")),
		chromedp.WaitVisible(chromedp.Search(`//td/span[@class="hdr" and text()="trace=t-17"]`)))
	// The search replaced the page (its URL names the filter) and shows
	// that one record.
	br.oneRecord("header")
	br.shot("messages")

	// The CEL filter finds a record by a JSON field of its value.
	br.run("search by CEL", chromedp.Navigate(s.base+"/topics/orders/messages?seek=start"), chromedp.WaitVisible(chromedp.CSS("#expr")),
		chromedp.SendKeys(chromedp.CSS("#expr"), `json.id == 23 && headers.trace.endsWith("23")`),
		chromedp.Click(chromedp.CSS("#search")),
		chromedp.WaitVisible(chromedp.Search(`//td/span[@class="hdr" and text()="trace=t-23"]`)))
	br.oneRecord("expr")
	br.shot("messages-cel")
	// An expression that does not compile is shown, the page stays.
	br.run("bad CEL", chromedp.SetValue(chromedp.CSS("#expr"), `json.id ==`), chromedp.Click(chromedp.CSS("#search")),
		chromedp.WaitVisible(chromedp.Search(`//*[@id="flash" and contains(., "400: expr filter does not compile")]`)))

	// Live tail shows a record produced after it started.
	br.run("open browser", chromedp.Navigate(s.base+"/topics/orders/messages"), chromedp.WaitVisible(chromedp.CSS("#tail")))
	br.run("start tail", chromedp.Click(chromedp.CSS("#tail")),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="tail-state" and text()="tailing…"]`)))
	produce(t, cl, &kgo.Record{Topic: "orders", Partition: 1, Value: []byte("fresh off the press")})
	br.run("tailed record", chromedp.WaitVisible(chromedp.Search(`//tr[contains(@class, "new")]//pre[text()="fresh off the press"]`)))
	br.shot("live-tail")
}

func TestBrowserGroup(t *testing.T) {
	s := startSite(t, nil)
	harness.CreateTopic(t, s.b.Admin(), "events", 2, nil)
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 10 {
		produce(t, cl, &kgo.Record{Topic: "events", Partition: int32(i % 2), Value: []byte("v")})
	}
	// The group first commits the start of both partitions: the page
	// shows a lag of 10. It then consumes, and the page's lag reaches 0.
	commitOffsets(t, s.b.Admin(), "readers", map[string]map[int32]int64{"events": {0: 0, 1: 0}})
	br := newBrowser(t)
	br.run("group list", chromedp.Navigate(s.base+"/groups"),
		chromedp.WaitVisible(chromedp.Search(`//a[text()="readers"]`)))
	br.shot("groups")
	br.run("group page before", chromedp.Navigate(s.base+"/groups/readers"),
		chromedp.WaitVisible(chromedp.Search(`//dd[@id="total-lag" and text()="10"]`)))
	br.shot("group-lagging")
	consumer := s.b.Client(kgo.ConsumerGroup("readers"), kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	consumeAll(t, consumer, 10)
	// Auto-commit commits in the background; this one makes sure the
	// last offsets are in before the consumer leaves.
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		br.run("group page", chromedp.Navigate(s.base+"/groups/readers"), chromedp.WaitVisible(chromedp.CSS("#total-lag")))
		rows, err := chromedp.Run(br.ctx, chromedp.Evaluate[int](`document.querySelectorAll("#lag td.lag").length`))
		if err != nil {
			t.Fatal(err)
		}
		if rows == 2 && br.text("#total-lag") == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag still %s after 30s", br.text("#total-lag"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	br.shot("group")
	t.Log("lag 0 seen")
	consumer.Close()
	s.waitFor("/groups/readers", `<dd id="state">Empty</dd>`)
	t.Log("group empty")

	// The reset asks for a confirmation before it commits.
	br.run("reset preview", chromedp.Navigate(s.base+"/groups/readers"), chromedp.WaitVisible(chromedp.CSS("#reset")),
		chromedp.SetValue(chromedp.CSS("#reset-to"), "earliest"),
		chromedp.Click(chromedp.CSS("#preview-reset")),
		chromedp.WaitVisible(chromedp.CSS("#confirm-reset")))
	if got := br.text("#total-lag"); got != "0" {
		t.Fatalf("lag %s before the confirmation", got)
	}
	br.shot("reset-confirmation")
	br.run("confirm", chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.Search(`//dd[@id="total-lag" and text()="10"]`)))
	br.shot("group-after-reset")
}

func TestBrowserLogin(t *testing.T) {
	s := startSite(t, map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT",
		"inter.broker.listener.name":     "PLAINTEXT",
		"sasl.enabled.mechanisms":        "SCRAM-SHA-256,SCRAM-SHA-512",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.b.Admin().AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	// Without a session every page sends the browser to the login form;
	// a wrong password is refused.
	if code, body := s.get("/topics"); code != 200 || !strings.Contains(body, `id="login"`) {
		t.Fatalf("GET /topics without a login: %d %s", code, body)
	}
	if code, _ := s.post("/login", url.Values{"user": {"alice"}, "password": {"wrong"}}); code != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", code)
	}
	if code, _ := s.post("/login", url.Values{"user": {"mallory"}, "password": {"alice-secret"}}); code != http.StatusUnauthorized {
		t.Fatalf("unknown user: %d", code)
	}
	br := newBrowser(t)
	br.run("login form", chromedp.Navigate(s.base+"/topics"), chromedp.WaitVisible(chromedp.CSS("#login")))
	br.shot("login")
	br.run("log in", chromedp.SendKeys(chromedp.CSS("#user"), "alice"), chromedp.SendKeys(chromedp.CSS("#password"), "alice-secret"),
		chromedp.Click(chromedp.CSS("#login")), chromedp.WaitVisible(chromedp.CSS("#topics")))
	if got := br.text(".who"); !strings.Contains(got, "User:alice") {
		t.Fatalf("logged in as %q", got)
	}
}
