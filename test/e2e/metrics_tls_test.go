package e2e

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/strata-broker/strata/internal/testcerts"
)

// TestMetricsTLSAndAuth serves metrics.listener over TLS (its own
// metrics.listener.ssl.* key store, beside a PLAINTEXT Kafka listener)
// with a bearer token and basic credentials: a scrape without
// credentials, or with wrong ones, gets 401; either credential gets the
// metrics; plain HTTP gets no answer.
func TestMetricsTLSAndAuth(t *testing.T) {
	f := newTLSFixture(t)
	scraper := f.issue(t, testcerts.Options{Subject: pkix.Name{CommonName: "metrics"}, Hosts: []string{"127.0.0.1"}})
	_, addr := startMeteredWith(t, map[string]string{
		"metrics.listener.security.protocol":     "SSL",
		"metrics.listener.ssl.keystore.type":     "PEM",
		"metrics.listener.ssl.keystore.location": f.write(t, "metrics.pem", scraper.Keystore()),
		"metrics.auth.bearer.token":              "scrape-token",
		"metrics.auth.basic.username":            "prometheus",
		"metrics.auth.basic.password":            "prom-pw",
	})
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.ca.Pool()}}}
	t.Cleanup(hc.CloseIdleConnections)
	scrape := func(set func(*http.Request)) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(testCtx(t), http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		set(req)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("scrape: %v", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	basic := func(u, p string) func(*http.Request) { return func(r *http.Request) { r.SetBasicAuth(u, p) } }

	for name, set := range map[string]func(*http.Request){
		"none":         func(*http.Request) {},
		"wrong token":  bearer("nope"),
		"wrong passwd": basic("prometheus", "nope"),
	} {
		if code, _ := scrape(set); code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, code)
		}
	}
	for name, set := range map[string]func(*http.Request){"bearer": bearer("scrape-token"), "basic": basic("prometheus", "prom-pw")} {
		code, body := scrape(set)
		if code != http.StatusOK || !strings.Contains(body, "strata_") {
			t.Errorf("%s: status %d, body %.80q", name, code, body)
		}
	}
	// Plain HTTP on the TLS port is refused (Go's HTTP server answers 400).
	resp, err := http.Get("http://" + addr + "/metrics")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP scrape of a TLS metrics listener succeeded")
		}
	}
}
