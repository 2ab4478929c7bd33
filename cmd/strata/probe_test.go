package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-broker/strata/broker"
	"github.com/strata-broker/strata/test/harness"
)

// TestProbe runs strata probe against a real broker's metrics listener:
// exit 0 on /readyz and /healthz, exit 1 naming the status on a path that
// is not a health endpoint and on a port where nothing listens.
func TestProbe(t *testing.T) {
	metrics := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	harness.Start(t, map[string]string{"metrics.listener": metrics, "metrics.auth.bearer.token": "s3cret"})
	closed := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"ready", []string{"probe", "--url", "http://" + metrics + broker.ReadyzPath}, 0, "ok\n", ""},
		{"alive quiet", []string{"probe", "--quiet", "--url", "http://" + metrics + broker.HealthzPath}, 0, "", ""},
		{"metrics needs the token", []string{"probe", "--url", "http://" + metrics + "/metrics"}, 1, "", "401 Unauthorized"},
		{"nothing listens", []string{"probe", "--timeout", "2s", "--url", "http://" + closed + broker.ReadyzPath}, 1, "", "connection refused"},
		{"bad timeout", []string{"probe", "--timeout", "0s"}, 1, "", "--timeout must be positive"},
		{"stray argument", []string{"probe", "extra"}, 1, "", "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tc.args, &out, &errOut); code != tc.code {
				t.Fatalf("exit code %d, want %d (stderr %q)", code, tc.code, errOut.String())
			}
			if out.String() != tc.stdout {
				t.Errorf("stdout %q, want %q", out.String(), tc.stdout)
			}
			if !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("stderr %q lacks %q", errOut.String(), tc.stderr)
			}
		})
	}
}
