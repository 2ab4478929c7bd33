package config

import (
	"strings"
	"testing"
)

// TestMetricsSecurity: the metrics endpoint takes the ssl.* keys overlaid
// by its metrics.listener.ssl.* ones; its secrets are sensitive.
func TestMetricsSecurity(t *testing.T) {
	b, err := Parse(map[string]string{
		"ssl.keystore.type":                      "PEM",
		"ssl.keystore.location":                  "/kafka.pem",
		"metrics.listener.security.protocol":     "ssl",
		"metrics.listener.ssl.keystore.location": "/metrics.pem",
		"metrics.listener.ssl.client.auth":       "required",
		"metrics.auth.bearer.token":              "tok",
		"metrics.auth.basic.username":            "prom",
		"metrics.auth.basic.password":            "pw",
	})
	if err != nil {
		t.Fatal(err)
	}
	m := b.Metrics
	if m.SecurityProtocol != ProtocolSSL || m.BearerToken != "tok" || m.BasicUsername != "prom" || m.BasicPassword != "pw" || !m.AuthRequired() {
		t.Errorf("Metrics = %+v", m)
	}
	s := b.MetricsSSL()
	if s.KeystoreType != StorePEM || s.KeystoreLocation != "/metrics.pem" || s.ClientAuth != "required" {
		t.Errorf("MetricsSSL = %+v", s)
	}
	if b.SSL.KeystoreLocation != "/kafka.pem" || b.SSL.ClientAuth == "required" {
		t.Errorf("broker-wide SSL changed: %+v", b.SSL)
	}
	for _, k := range []string{"metrics.auth.bearer.token", "metrics.auth.basic.password", "metrics.listener.ssl.key.password"} {
		if !IsSensitive(k) {
			t.Errorf("%s is not sensitive", k)
		}
	}
	if IsSensitive("metrics.auth.basic.username") || IsSensitive("metrics.listener.ssl.keystore.location") {
		t.Error("a non-secret metrics key is sensitive")
	}
	r := redacted(b.static)
	if strings.Contains(r["metrics.auth.bearer.token"], "tok") || strings.Contains(r["metrics.auth.basic.password"], "pw") {
		t.Errorf("redacted: %v", r)
	}

	d, err := Parse(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Metrics.SecurityProtocol != ProtocolPlaintext || d.Metrics.AuthRequired() {
		t.Errorf("default Metrics = %+v", d.Metrics)
	}
}

func TestMetricsSecurityErrors(t *testing.T) {
	for _, tc := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"metrics.listener.security.protocol": "SASL_SSL"}, "metrics.listener.security.protocol"},
		{map[string]string{"metrics.auth.basic.username": "prom"}, "must be set together"},
		{map[string]string{"metrics.auth.basic.password": "pw"}, "must be set together"},
		{map[string]string{"metrics.listener.ssl.client.auth": "sometimes"}, "metrics.listener.ssl.client.auth"},
		{map[string]string{"metrics.listener.sasl.enabled.mechanisms": "PLAIN"}, "metrics.listener.sasl.enabled.mechanisms"},
	} {
		if _, err := Parse(tc.kv); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.kv, err, tc.want)
		}
	}
}
