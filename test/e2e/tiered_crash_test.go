package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/test/harness"
	"github.com/strata-broker/strata/test/minio"
)

// stallProxy is an S3 reverse proxy in front of MinIO that holds the first
// request matching an armed rule until its client goes away (the broker is
// killed), so a test stops a copy or a deletion at one exact step: between
// two objects of the same segment. A TCP proxy cannot tell the requests of
// one copy apart; this one sees method and key.
//
// Concurrency: the HTTP server's goroutines call ServeHTTP; mu guards rule.
type stallProxy struct {
	url     string
	rp      *httputil.ReverseProxy
	mu      sync.Mutex
	rule    func(*http.Request) bool // nil: forward everything
	stalled chan string              // the path of the held request
	done    chan struct{}            // closed at test end: held requests return
}

// startStallProxy forwards to target (a MinIO endpoint URL) until the test
// ends. The Host header is kept, so SigV4 signatures still verify.
func startStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{rp: httputil.NewSingleHostReverseProxy(u), stalled: make(chan string, 1), done: make(chan struct{})}
	srv := httptest.NewServer(p)
	p.url = srv.URL
	t.Cleanup(func() {
		close(p.done)
		srv.Close()
	})
	return p
}

// stallOnce holds the next request for which rule is true.
func (p *stallProxy) stallOnce(rule func(*http.Request) bool) {
	p.mu.Lock()
	p.rule = rule
	p.mu.Unlock()
}

// ServeHTTP implements http.Handler.
func (p *stallProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	hold := p.rule != nil && p.rule(r)
	if hold {
		p.rule = nil
	}
	p.mu.Unlock()
	if !hold {
		p.rp.ServeHTTP(w, r)
		return
	}
	p.stalled <- r.Method + " " + r.URL.Path
	select {
	case <-r.Context().Done():
	case <-p.done:
	}
	http.Error(w, "stalled by the test", http.StatusServiceUnavailable)
}

// waitStalled waits until the proxy holds a request and returns it.
func (p *stallProxy) waitStalled(t *testing.T) string {
	t.Helper()
	select {
	case what := <-p.stalled:
		return what
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for the stalled object store request")
		return ""
	}
}

// requestFor matches a request of method for a key ending in suffix.
func requestFor(method, suffix string) func(*http.Request) bool {
	return func(r *http.Request) bool { return r.Method == method && strings.HasSuffix(r.URL.Path, suffix) }
}

// crashRig is one broker process tiering to MinIO through a stallProxy,
// with its metadata in an external etcd the test reads.
type crashRig struct {
	srv   *minio.Server
	proxy *stallProxy
	cli   *clientv3.Client
	b     *harness.Process
}

// tieredHalf creates a one-partition tiered topic, produces n records and
// waits until more than half of them are tiered.
func (r *crashRig) tieredHalf(t *testing.T, topic string, n int) (*kadm.Client, kadm.TopicID, []*kgo.Record) {
	t.Helper()
	adm := harness.NewAdmin(t, r.b.Addr())
	id := harness.CreateTopic(t, adm, topic, 1, tieredTopic)
	cl := harness.NewClient(t, r.b.Addr(), tieredProducer...)
	want := produceTiered(t, cl, topic, 1, n)[0]
	waitFor(t, "segments tiered", func() bool { return listOffset(t, cl, topic, 0, -5) > int64(len(want))/2 })
	return adm, id, want
}

func startCrashRig(t *testing.T) *crashRig {
	t.Helper()
	r := &crashRig{srv: minio.Start(t)}
	r.proxy = startStallProxy(t, r.srv.Endpoint)
	etcd := harness.StartEtcd(t)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.Endpoint()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	r.cli = cli
	cfg := minioTiering(r.srv)
	cfg["remote.log.storage.s3.endpoint"] = r.proxy.url
	cfg["metadata.etcd.endpoints"] = etcd.Endpoint()
	cfg["broker.session.timeout.ms"] = "3000"
	r.b = harness.StartProcess(t, cfg)
	return r
}

// records returns the state of every remote segment record of a
// partition, by record name.
func (r *crashRig) records(t *testing.T, id kadm.TopicID, p int32) map[string]string {
	t.Helper()
	dir := fmt.Sprintf("/strata/remote/%x/%d/seg/", [16]byte(id), p)
	resp, err := r.cli.Get(testCtx(t), dir, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		var s struct {
			State string `json:"state"`
		}
		if err := json.Unmarshal(kv.Value, &s); err != nil {
			t.Fatalf("record %s: %v", kv.Key, err)
		}
		out[strings.TrimPrefix(string(kv.Key), dir)] = s.State
	}
	return out
}

// inconsistency describes the first way the partition's bucket and etcd
// records disagree ("" when they agree): a copy or deletion left
// unfinished, an object no finished record names, a finished record
// missing one of its 5 objects.
func (r *crashRig) inconsistency(t *testing.T, topic string, id kadm.TopicID, p int32) string {
	t.Helper()
	recs := r.records(t, id, p)
	prefix := fmt.Sprintf("%s-%x/%d/", topic, [16]byte(id), p)
	objects := map[string]int{}
	for _, key := range bucketKeys(t, r.srv, prefix) {
		name := strings.TrimPrefix(key, prefix)
		if name == "manifest.json" {
			continue
		}
		stem := name[:strings.LastIndexByte(name, '.')]
		if recs[stem] != "COPY_FINISHED" {
			return fmt.Sprintf("object %s has record state %q", key, recs[stem])
		}
		objects[stem]++
	}
	for name, state := range recs {
		switch {
		case state == "COPY_STARTED" || state == "DELETE_STARTED":
			return fmt.Sprintf("record %s left in %s", name, state)
		case state == "COPY_FINISHED" && objects[name] != 5:
			return fmt.Sprintf("finished copy %s has %d objects", name, objects[name])
		}
	}
	return ""
}

// TestTieredKillDuringUpload: the bucket stalls a copy after its .log
// object arrived; the broker is killed with SIGKILL while the copy is in
// flight (COPY_STARTED in etcd, an orphan .log in the bucket). After a
// restart the orphan is cleaned up, copying resumes, the bucket and etcd
// agree, and every acknowledged record reads back from offset 0 once.
func TestTieredKillDuringUpload(t *testing.T) {
	r := startCrashRig(t)
	adm := harness.NewAdmin(t, r.b.Addr())
	id := harness.CreateTopic(t, adm, "crash-copy", 1, tieredTopic)
	r.proxy.stallOnce(requestFor(http.MethodPut, ".index"))
	cl := harness.NewClient(t, r.b.Addr(), tieredProducer...)
	want := produceTiered(t, cl, "crash-copy", 1, 800)
	held := r.proxy.waitStalled(t)
	stem := held[strings.LastIndexByte(held, '/')+1 : strings.LastIndexByte(held, '.')]
	if st := r.records(t, id, 0)[stem]; st != "COPY_STARTED" {
		t.Fatalf("stalled copy %s has record state %q", stem, st)
	}
	if len(bucketKeys(t, r.srv, fmt.Sprintf("crash-copy-%x/0/%s.log", [16]byte(id), stem))) != 1 {
		t.Fatalf("the .log object of %s is not in the bucket", stem)
	}
	r.b.Kill9()

	r.b.Restart()
	cl = harness.NewClient(t, r.b.Addr(), tieredProducer...)
	waitFor(t, "the interrupted copy to be cleaned up and copying to resume", func() bool {
		_, left := r.records(t, id, 0)[stem]
		return !left && listOffset(t, cl, "crash-copy", 0, -5) > int64(len(want[0]))/2 &&
			r.inconsistency(t, "crash-copy", id, 0) == ""
	})
	got := harness.ReadAll(t, r.b.Addr(), "crash-copy")
	checkPartition(t, "crash-copy", 0, want[0], got[0])
}

// TestTieredKillDuringRemoteDeletion: remote retention starts deleting a
// copy; the bucket stalls the deletion after the .log object is gone and
// the broker is killed (DELETE_STARTED in etcd). After a restart the
// deletion completes, the log start offset has advanced, no stray object
// is left, and the log reads back from its new start.
func TestTieredKillDuringRemoteDeletion(t *testing.T) {
	r := startCrashRig(t)
	adm, id, want := r.tieredHalf(t, "crash-delete", 800)

	r.proxy.stallOnce(requestFor(http.MethodDelete, ".index"))
	set := func(k, v string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)}
	}
	resps, err := adm.AlterTopicConfigs(testCtx(t), []kadm.AlterConfig{set("retention.bytes", "60000")}, "crash-delete")
	if err == nil {
		_, err = resps.On("crash-delete", nil)
	}
	if err != nil {
		t.Fatalf("set retention.bytes: %v", err)
	}
	held := r.proxy.waitStalled(t)
	stem := held[strings.LastIndexByte(held, '/')+1 : strings.LastIndexByte(held, '.')]
	if st := r.records(t, id, 0)[stem]; st != "DELETE_STARTED" {
		t.Fatalf("stalled deletion %s has record state %q", stem, st)
	}
	r.b.Kill9()

	r.b.Restart()
	cl := harness.NewClient(t, r.b.Addr(), tieredProducer...)
	prefix := fmt.Sprintf("crash-delete-%x/0/%s.", [16]byte(id), stem)
	waitFor(t, "the interrupted deletion to complete", func() bool {
		st := r.records(t, id, 0)[stem]
		return (st == "" || st == "DELETE_FINISHED") && len(bucketKeys(t, r.srv, prefix)) == 0 &&
			r.inconsistency(t, "crash-delete", id, 0) == ""
	})
	start := listOffset(t, cl, "crash-delete", 0, -2)
	if start <= 0 || start >= int64(len(want)) {
		t.Fatalf("log start offset %d after remote retention (%d records)", start, len(want))
	}
	got := harness.ReadAll(t, r.b.Addr(), "crash-delete")
	if msg := r.inconsistency(t, "crash-delete", id, 0); msg != "" {
		t.Fatal(msg)
	}
	if len(got[0]) == 0 || got[0][0].Offset < start {
		t.Fatalf("read %d records from the log start %d", len(got[0]), start)
	}
	tail := want[got[0][0].Offset:]
	if len(got[0]) != len(tail) {
		t.Fatalf("read %d records from offset %d, produced %d past it", len(got[0]), got[0][0].Offset, len(tail))
	}
	for i, w := range tail {
		if err := sameRecord(w, got[0][i]); err != nil || got[0][i].Offset != w.Offset {
			t.Fatalf("record at offset %d: read at %d: %v", w.Offset, got[0][i].Offset, err)
		}
	}
	t.Logf("log start offset %d of %d records after the stalled %s", start, len(want), held)
}

// TestTieredKillDuringTopicDeletion: a tiered topic is deleted and the
// bucket stalls the sweep that removes its objects; the broker is killed
// midway. After a restart the sweep resumes from the deleted-topic marker
// and the prefix, the remote records and the marker are all gone.
func TestTieredKillDuringTopicDeletion(t *testing.T) {
	r := startCrashRig(t)
	adm, id, _ := r.tieredHalf(t, "crash-drop", 600)
	prefix := fmt.Sprintf("crash-drop-%x/", [16]byte(id))

	r.proxy.stallOnce(requestFor(http.MethodDelete, ".index"))
	resp, err := adm.DeleteTopic(testCtx(t), "crash-drop")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	r.proxy.waitStalled(t)
	marker := fmt.Sprintf("deleted-topics/%x", [16]byte(id))
	if etcdCount(t, r.cli, marker) != 1 {
		t.Fatal("no deleted-topic marker while the sweep is stalled")
	}
	r.b.Kill9()
	if len(bucketKeys(t, r.srv, prefix)) == 0 {
		t.Fatal("no objects left when the sweep was stalled")
	}

	r.b.Restart()
	waitFor(t, "the sweep to finish after the restart", func() bool {
		return len(bucketKeys(t, r.srv, prefix)) == 0 && etcdCount(t, r.cli, fmt.Sprintf("remote/%x/", [16]byte(id))) == 0 &&
			etcdCount(t, r.cli, marker) == 0
	})
}
