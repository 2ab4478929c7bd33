package config

import (
	"errors"
	"sort"
	"strings"
)

// Metrics is how the metrics.listener endpoint (/metrics, the admin
// endpoints, pprof) is served and who may read it.
type Metrics struct {
	SecurityProtocol string // metrics.listener.security.protocol: PLAINTEXT or SSL
	BearerToken      string // metrics.auth.bearer.token (sensitive)
	BasicUsername    string // metrics.auth.basic.username
	BasicPassword    string // metrics.auth.basic.password (sensitive)
}

// MetricsSSL returns the metrics endpoint's TLS settings, used when
// metrics.listener.security.protocol is SSL: the ssl.* keys overlaid by
// the metrics.listener.ssl.* ones.
func (b *Broker) MetricsSSL() SSL {
	if b.metricsSSL == nil {
		return b.SSL
	}
	return *b.metricsSSL
}

// AuthRequired reports whether requests must carry credentials.
func (m Metrics) AuthRequired() bool { return m.BearerToken != "" || m.BasicUsername != "" }

// metricsSSLPrefix opens a TLS key of the metrics endpoint:
// metrics.listener.<ssl.* key>.
const metricsSSLPrefix = "metrics.listener."

// metricsSSLKey splits metrics.listener.ssl.* into the ssl.* key it
// overrides for the metrics endpoint.
func metricsSSLKey(k string) (string, bool) {
	key, ok := strings.CutPrefix(k, metricsSSLPrefix)
	if !ok || !strings.HasPrefix(key, "ssl.") {
		return "", false
	}
	_, known := brokerIndex[key]
	return key, known
}

// deriveMetrics builds the metrics endpoint's TLS settings (ssl.*
// overlaid by metrics.listener.ssl.*) and checks its credentials.
func (b *Broker) deriveMetrics() error {
	o := &Broker{SSL: b.SSL}
	var keys []string
	for k := range b.set {
		if _, ok := metricsSSLKey(k); ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		key, _ := metricsSSLKey(k)
		if err := brokerIndex[key].f.set(o, b.set[k]); err != nil {
			return invalid(k, err)
		}
	}
	b.metricsSSL = &o.SSL
	if (b.Metrics.BasicUsername == "") != (b.Metrics.BasicPassword == "") {
		return invalid("metrics.auth.basic.username", errors.New("metrics.auth.basic.username and metrics.auth.basic.password must be set together"))
	}
	return nil
}
