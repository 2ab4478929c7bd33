package config

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

// SSL is the ssl.* keys of one listener (Kafka's SslConfigs; PEM only).
// Empty strings are unset keys.
type SSL struct {
	KeystoreType             string // ssl.keystore.type (JKS; Strata reads PEM only)
	KeystoreLocation         string // ssl.keystore.location
	KeystorePassword         string // ssl.keystore.password (sensitive; refused with PEM)
	KeystoreCertificateChain string // ssl.keystore.certificate.chain (sensitive)
	KeystoreKey              string // ssl.keystore.key (sensitive)
	KeyPassword              string // ssl.key.password (sensitive)
	TruststoreType           string // ssl.truststore.type (JKS; Strata reads PEM only)
	TruststoreLocation       string // ssl.truststore.location
	TruststorePassword       string // ssl.truststore.password (sensitive; refused with PEM)
	TruststoreCertificates   string // ssl.truststore.certificates (sensitive)
	ClientAuth               string // ssl.client.auth: none, requested or required
	EnabledProtocols         []string
	CipherSuites             []string
	Protocol                 string // ssl.protocol (compat)
	// EndpointIdentificationAlgorithm is
	// ssl.endpoint.identification.algorithm: "https" checks the host name
	// of another broker's certificate, "" does not.
	EndpointIdentificationAlgorithm string
	PrincipalMappingRules           string // ssl.principal.mapping.rules (DEFAULT)
}

// Key store and trust store types.
const (
	StoreJKS    = "JKS"
	StorePKCS12 = "PKCS12"
	StorePEM    = "PEM"
)

var storeTypes = []string{StoreJKS, StorePKCS12, StorePEM}

// TLSVersions maps ssl.enabled.protocols' names to crypto/tls versions.
var TLSVersions = map[string]uint16{
	"TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11, "TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13,
}

func tlsVersionItem(v string) (string, error) {
	for name := range TLSVersions {
		if strings.EqualFold(v, name) {
			return name, nil
		}
	}
	return "", fmt.Errorf("unknown protocol %q (want TLSv1.2 or TLSv1.3)", v)
}

// CipherSuite returns the crypto/tls id of an IANA cipher suite name, and
// whether it is one of TLS 1.3's (which Go always enables).
func CipherSuite(name string) (id uint16, tls13, ok bool) {
	for _, cs := range slices.Concat(tls.CipherSuites(), tls.InsecureCipherSuites()) {
		if cs.Name == name {
			return cs.ID, slices.Equal(cs.SupportedVersions, []uint16{tls.VersionTLS13}), true
		}
	}
	return 0, false, false
}

func cipherSuiteItem(v string) (string, error) {
	if _, _, ok := CipherSuite(v); !ok {
		return "", fmt.Errorf("unknown cipher suite %q (want an IANA name such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", v)
	}
	return v, nil
}

func checkPrincipalRules(v string) error {
	_, err := ParsePrincipalRules(v)
	return err
}

// isListenerKey reports whether k is a per-listener key
// (listener.name.<name>.ssl.*) or one of the metrics endpoint
// (metrics.listener.ssl.*).
func isListenerKey(k string) bool {
	if _, ok := metricsSSLKey(k); ok {
		return true
	}
	_, _, ok := listenerKey(k)
	return ok
}

// IsSensitive reports whether a broker key's value is a secret, to be
// redacted in DescribeConfigs and logs; a per-listener key is sensitive
// when the key it overrides is.
func IsSensitive(k string) bool {
	if _, key, ok := listenerKey(k); ok {
		return listenerKeyDef(key).sensitive
	}
	if key, ok := metricsSSLKey(k); ok {
		return brokerIndex[key].sensitive
	}
	d, ok := brokerIndex[k]
	return ok && d.sensitive
}
