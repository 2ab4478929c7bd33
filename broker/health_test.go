package broker

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// get requests path on a broker's metrics listener without credentials
// and returns the status and body.
func get(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: runTimeout}).Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// waitReadyz polls ReadyzPath (bounded by runTimeout) until its status is
// want and its body contains sub, and returns the body.
func waitReadyz(t *testing.T, addr string, want int, sub string) string {
	t.Helper()
	deadline := time.Now().Add(runTimeout)
	for {
		code, body := get(t, addr, ReadyzPath)
		if code == want && strings.Contains(body, sub) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d %q, want %d containing %q", ReadyzPath, code, body, want, sub)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHealthEndpoints: /healthz and /readyz answer without the metrics
// credentials that /metrics asks for; /readyz turns 503, naming the
// partition, while a partition led here has fewer in-sync replicas than
// its min.insync.replicas, and 200 again once that is lowered.
func TestHealthEndpoints(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), map[string]string{"metrics.auth.bearer.token": "s3cret"})
	r := startServer(t, cfg)
	defer func() {
		r.cancel()
		if err := r.wait(t); err != nil {
			t.Error(err)
		}
	}()
	addr := r.s.node.metricsLn.Addr().String()
	if code, body := get(t, addr, HealthzPath); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("%s: %d %q", HealthzPath, code, body)
	}
	waitReadyz(t, addr, http.StatusOK, "ok")
	if code, _ := get(t, addr, "/metrics"); code != http.StatusUnauthorized {
		t.Fatalf("/metrics without the token: %d, want 401", code)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(r.s.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	two := "2"
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"min.insync.replicas": &two}, "under"); err != nil {
		t.Fatal(err)
	}
	body := waitReadyz(t, addr, http.StatusServiceUnavailable, "under-1: led here with 1 in-sync replicas, below min.insync.replicas 2")
	if !strings.HasPrefix(body, "under-0: ") {
		t.Errorf("reasons not in order: %q", body)
	}
	one := "1"
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "min.insync.replicas", Value: &one}}, "under")
	if err == nil {
		_, err = rs.On("under", nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	waitReadyz(t, addr, http.StatusOK, "ok")
}

// TestReadyzOfflineReplica: a partition assigned here whose log cannot
// open keeps the broker not ready, while /healthz still answers 200.
func TestReadyzOfflineReplica(t *testing.T) {
	dir := t.TempDir()
	r := startServer(t, testConfig(t, dir, map[string]string{"num.partitions": "2"}))
	produceOne(t, r.s.Addr(), "two", 1)
	r.cancel()
	if err := r.wait(t); err != nil {
		t.Fatal(err)
	}
	p0 := filepath.Join(dir, "two-0")
	if err := os.RemoveAll(p0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p0, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r = startServer(t, testConfig(t, dir, map[string]string{"num.partitions": "2"}))
	defer func() {
		r.cancel()
		if err := r.wait(t); err != nil {
			t.Error(err)
		}
	}()
	addr := r.s.node.metricsLn.Addr().String()
	if code, _ := get(t, addr, HealthzPath); code != http.StatusOK {
		t.Fatalf("%s: %d", HealthzPath, code)
	}
	body := waitReadyz(t, addr, http.StatusServiceUnavailable, "two-0: replica not open")
	if strings.Contains(body, "two-1") || strings.Contains(body, "registered") {
		t.Errorf("unexpected reasons: %q", body)
	}
}
