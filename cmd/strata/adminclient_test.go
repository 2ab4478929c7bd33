package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509/pkix"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/strata-broker/strata/broker"
	"github.com/strata-broker/strata/internal/testcerts"
)

// TestTierCommandConfig: with --command-config the tier commands reach a
// metrics endpoint served over TLS that requires a client certificate
// and a bearer token; without it, or with a wrong token, they fail with
// the broker's answer.
func TestTierCommandConfig(t *testing.T) {
	dir := t.TempDir()
	ca, err := testcerts.NewCA("tier-ca")
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Issue(testcerts.Options{Subject: pkix.Name{CommonName: "broker"}, Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Issue(testcerts.Options{Subject: pkix.Name{CommonName: "operator"}})
	if err != nil {
		t.Fatal(err)
	}
	caFile, err := testcerts.WriteFile(dir, "ca.pem", ca.PEM)
	if err != nil {
		t.Fatal(err)
	}
	keystore, err := testcerts.WriteFile(dir, "operator.pem", client.Keystore())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || r.TLS.PeerCertificates[0].Subject.CommonName != "operator" {
			t.Errorf("client certificate missing")
		}
		answer(http.StatusOK, broker.TierStatus{Broker: 7, TieringEnabled: true})(w, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{server.TLS()}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
	srv.StartTLS()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "https://")

	props := func(name, text string) string {
		f, err := testcerts.WriteFile(dir, name, text)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	tlsProps := "metrics.listener.security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + caFile +
		"\nssl.keystore.type=PEM\nssl.keystore.location=" + keystore + "\n"
	for _, tc := range []struct {
		name string
		args []string
		err  string // "" when the call must succeed
	}{
		{name: "tls and token", args: []string{"--command-config", props("good.properties", tlsProps+"metrics.auth.bearer.token=s3cret\nsecurity.protocol=SASL_SSL\n")}},
		{name: "wrong token", args: []string{"--command-config", props("wrong.properties", tlsProps+"metrics.auth.bearer.token=nope\n")}, err: "401 Unauthorized"},
		{name: "no command config", err: "400 Bad Request"},
		{name: "both credentials", args: []string{"--command-config", props("both.properties", tlsProps+"metrics.auth.bearer.token=a\nmetrics.auth.basic.username=u\nmetrics.auth.basic.password=p\n")}, err: "not both"},
		{name: "bad protocol", args: []string{"--command-config", props("proto.properties", "metrics.listener.security.protocol=SASL_SSL\n")}, err: "want PLAINTEXT or SSL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(append([]string{"tier", "status", "--admin", addr, "--json"}, tc.args...), &out, &errOut)
			if tc.err == "" {
				if code != 0 || !strings.Contains(out.String(), `"broker": 7`) {
					t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
				}
				return
			}
			if code == 0 || !strings.Contains(errOut.String(), tc.err) {
				t.Fatalf("exit %d, stderr %q, want %q", code, errOut.String(), tc.err)
			}
		})
	}
}
