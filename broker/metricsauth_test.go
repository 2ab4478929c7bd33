package broker

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/strata-broker/strata/config"
)

func TestMetricsAuth(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	bearer := config.Metrics{BearerToken: "s3cret"}
	basic := config.Metrics{BasicUsername: "prom", BasicPassword: "pw"}
	both := config.Metrics{BearerToken: "s3cret", BasicUsername: "prom", BasicPassword: "pw"}
	withBasic := func(u, p string) func(*http.Request) { return func(r *http.Request) { r.SetBasicAuth(u, p) } }
	withHeader := func(v string) func(*http.Request) { return func(r *http.Request) { r.Header.Set("Authorization", v) } }
	for _, tc := range []struct {
		name string
		m    config.Metrics
		set  func(*http.Request)
		want int
	}{
		{"no auth configured", config.Metrics{}, func(*http.Request) {}, 200},
		{"bearer missing", bearer, func(*http.Request) {}, 401},
		{"bearer right", bearer, withHeader("Bearer s3cret"), 200},
		{"bearer wrong", bearer, withHeader("Bearer s3cre"), 401},
		{"bearer as basic", bearer, withBasic("x", "s3cret"), 401},
		{"basic right", basic, withBasic("prom", "pw"), 200},
		{"basic wrong password", basic, withBasic("prom", "px"), 401},
		{"basic wrong user", basic, withBasic("graf", "pw"), 401},
		{"basic given a bearer", basic, withHeader("Bearer pw"), 401},
		{"either: bearer", both, withHeader("Bearer s3cret"), 200},
		{"either: basic", both, withBasic("prom", "pw"), 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			tc.set(r)
			w := httptest.NewRecorder()
			metricsAuth(tc.m, ok).ServeHTTP(w, r)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d", w.Code, tc.want)
			}
			if w.Code == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Fatal("401 without a WWW-Authenticate challenge")
			}
		})
	}
}
