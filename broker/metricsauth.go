package broker

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/strata-broker/strata/config"
)

// metricsAuth wraps the metrics endpoint's handler so that, when
// metrics.auth.* credentials are configured, a request passes only with
// the bearer token or the basic user and password; any other gets 401
// with a challenge. The health endpoints (HealthzPath, ReadyzPath) pass
// without credentials, for probes. Without credentials configured it
// returns h.
func metricsAuth(m config.Metrics, h http.Handler) http.Handler {
	if !m.AuthRequired() {
		return h
	}
	challenge := `Bearer realm="strata"`
	if m.BasicUsername != "" {
		challenge = `Basic realm="strata", charset="UTF-8"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == HealthzPath || r.URL.Path == ReadyzPath || metricsAuthorized(m, r) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", challenge)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
}

// metricsAuthorized reports whether r carries the configured bearer token
// or basic credentials, compared in constant time.
func metricsAuthorized(m config.Metrics, r *http.Request) bool {
	if m.BearerToken != "" {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && equalSecret(strings.TrimSpace(tok), m.BearerToken) {
			return true
		}
	}
	if m.BasicUsername != "" {
		if u, p, ok := r.BasicAuth(); ok {
			// Both compared, so that a wrong user takes as long as a wrong password.
			uok, pok := equalSecret(u, m.BasicUsername), equalSecret(p, m.BasicPassword)
			return uok && pok
		}
	}
	return false
}

// equalSecret compares a and b in time independent of where they differ
// and of their lengths (their hashes are compared).
func equalSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}
