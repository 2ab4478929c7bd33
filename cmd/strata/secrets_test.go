package main

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/strata-broker/strata/config"
)

// sensitiveKeys is every secret broker key. A key that becomes secret, or
// stops being one, must be added here or removed: the test then checks it.
var sensitiveKeys = []string{
	"metadata.etcd.password",
	"metrics.auth.basic.password",
	"metrics.auth.bearer.token",
	"remote.log.storage.s3.access.key",
	"remote.log.storage.s3.secret.key",
	"sasl.jaas.config",
	"ssl.key.password",
	"ssl.keystore.certificate.chain",
	"ssl.keystore.key",
	"ssl.keystore.password",
	"ssl.truststore.certificates",
	"ssl.truststore.password",
}

// secretNeeds are the other keys a secret key is valid with.
var secretNeeds = map[string][]string{
	"metadata.etcd.password":      {"metadata.etcd.endpoints=127.0.0.1:2379", "metadata.etcd.username=strata"},
	"metrics.auth.basic.password": {"metrics.auth.basic.username=strata"},
}

// TestSecretsHidden: each secret key, set broker-wide and (ssl.* and
// sasl.*) per listener, is hidden in DescribeConfigs' entries, in the
// output of `strata config` and in the start-up "configuration" log line.
func TestSecretsHidden(t *testing.T) {
	var described []string
	for _, e := range config.Default().DescribeBroker() {
		if e.Sensitive {
			described = append(described, e.Name)
		}
	}
	slices.Sort(described)
	if !slices.Equal(described, sensitiveKeys) {
		t.Fatalf("sensitive keys %q, want %q: update sensitiveKeys", described, sensitiveKeys)
	}
	for _, key := range sensitiveKeys {
		keys := []string{key}
		if strings.HasPrefix(key, "ssl.") || strings.HasPrefix(key, "sasl.") {
			keys = append(keys, "listener.name.plaintext."+key)
		}
		if key == "sasl.jaas.config" {
			keys = append(keys, "listener.name.plaintext.plain."+key)
		}
		for _, k := range keys {
			t.Run(k, func(t *testing.T) {
				secret := "S3CRET-" + strings.ReplaceAll(k, ".", "-")
				args := []string{"--set", k + "=" + secret}
				for _, n := range secretNeeds[key] {
					args = append(args, "--set", n)
				}
				checkHidden(t, k, secret, args)
			})
		}
	}
}

func checkHidden(t *testing.T, key, secret string, args []string) {
	t.Helper()
	var errOut bytes.Buffer
	cfg, err := loadConfig("config", args, &errOut, nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if cfg.Raw[key] != secret {
		t.Fatalf("Raw[%s] = %q: the key did not take", key, cfg.Raw[key])
	}
	if !config.IsSensitive(key) {
		t.Errorf("IsSensitive(%s) false", key)
	}
	found := false
	for _, e := range cfg.DescribeBroker() {
		if strings.Contains(e.Value, secret) || slices.ContainsFunc(e.Synonyms, func(s config.Synonym) bool { return strings.Contains(s.Value, secret) }) {
			t.Errorf("DescribeBroker %s reveals it: %+v", e.Name, e)
		}
		found = found || e.Name == key
	}
	if !found {
		t.Errorf("DescribeBroker lacks %s", key)
	}

	var out bytes.Buffer
	if err := runConfig(t.Context(), args, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), secret) || !strings.Contains(out.String(), "\n"+key+"=[hidden]\n") {
		t.Errorf("strata config does not hide %s:\n%s", key, grepLines(out.String(), key))
	}

	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("configuration", explicitSettings(cfg)...)
	if strings.Contains(logged.String(), secret) || !strings.Contains(logged.String(), key+"=[hidden]") {
		t.Errorf("configuration log line does not hide %s: %s", key, logged.String())
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}
