package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/broker/sasl"
	"github.com/strata-broker/strata/broker/security"
	"github.com/strata-broker/strata/config"
)

// clientDialTimeout bounds a connection to a broker, TLS handshake
// included.
const clientDialTimeout = 10 * time.Second

// clientKeys are the Kafka client properties --command-config reads, as
// Kafka's tools take them. Other ssl.*, sasl.* and security.* keys are
// refused; any other key (client.id, ...) is ignored, as Kafka's tools
// ignore the keys a command does not use.
var clientKeys = map[string]bool{
	"security.protocol": true, "sasl.mechanism": true, "sasl.jaas.config": true,
	"ssl.truststore.type": true, "ssl.truststore.location": true, "ssl.truststore.certificates": true,
	"ssl.keystore.type": true, "ssl.keystore.location": true, "ssl.keystore.certificate.chain": true,
	"ssl.keystore.key": true, "ssl.key.password": true, "ssl.endpoint.identification.algorithm": true,
	"ssl.enabled.protocols": true,
}

// commandConfigOptions reads a --command-config properties file ("" is
// none) into client options.
func commandConfigOptions(path string) ([]kgo.Opt, error) {
	if path == "" {
		return nil, nil
	}
	props, err := readCommandConfig(path)
	if err != nil {
		return nil, err
	}
	opts, err := clientOptions(props)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	return opts, nil
}

// readCommandConfig reads a --command-config properties file.
func readCommandConfig(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	defer f.Close()
	props, err := config.ParseProperties(f)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	return props, nil
}

// checkClientKeys refuses the ssl.*, sasl.* and security.* keys clients
// do not support.
func checkClientKeys(p map[string]string) error {
	for k := range p {
		if !clientKeys[k] && (strings.HasPrefix(k, "ssl.") || strings.HasPrefix(k, "sasl.") || strings.HasPrefix(k, "security.")) {
			return fmt.Errorf("%s is not supported", k)
		}
	}
	return nil
}

// clientOptions turns Kafka client security properties into franz-go
// options: a TLS dialer for SSL and SASL_SSL (PEM trust and key stores,
// the broker's host name checked unless ssl.endpoint.identification.algorithm
// is empty), and a SASL login (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, with
// the username and password of sasl.jaas.config) for SASL_PLAINTEXT and
// SASL_SSL.
func clientOptions(p map[string]string) ([]kgo.Opt, error) {
	if err := checkClientKeys(p); err != nil {
		return nil, err
	}
	protocol := config.ProtocolPlaintext
	if v, ok := p["security.protocol"]; ok {
		protocol = strings.ToUpper(v)
	}
	var useTLS, useSASL bool
	switch protocol {
	case config.ProtocolPlaintext:
	case config.ProtocolSSL:
		useTLS = true
	case config.ProtocolSASLPlaintext:
		useSASL = true
	case config.ProtocolSASLSSL:
		useTLS, useSASL = true, true
	default:
		return nil, fmt.Errorf("security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", p["security.protocol"])
	}
	var opts []kgo.Opt
	if useTLS {
		dial, err := tlsDialer(p)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.Dialer(dial))
	}
	if useSASL {
		mech, ok := p["sasl.mechanism"]
		if !ok {
			mech = "GSSAPI" // Kafka's default, refused below
		}
		m, err := sasl.ClientMechanism(mech, p["sasl.jaas.config"])
		if err != nil {
			return nil, fmt.Errorf("sasl.mechanism %s with sasl.jaas.config: %w", mech, err)
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}

// tlsDialer dials brokers over TLS with the ssl.* properties.
func tlsDialer(p map[string]string) (func(ctx context.Context, network, host string) (net.Conn, error), error) {
	c, err := clientTLS(p)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: clientDialTimeout}, Config: c.Config(host)}
		return d.DialContext(ctx, network, addr)
	}, nil
}

// clientTLS loads the ssl.* properties as the broker loads a listener's
// (PEM only).
func clientTLS(p map[string]string) (*security.Client, error) {
	or := func(k, def string) string {
		if v, ok := p[k]; ok {
			return v
		}
		return def
	}
	s := config.SSL{
		KeystoreType:                    strings.ToUpper(or("ssl.keystore.type", config.StorePEM)),
		KeystoreLocation:                p["ssl.keystore.location"],
		KeystoreCertificateChain:        p["ssl.keystore.certificate.chain"],
		KeystoreKey:                     p["ssl.keystore.key"],
		KeyPassword:                     p["ssl.key.password"],
		TruststoreType:                  strings.ToUpper(or("ssl.truststore.type", config.StorePEM)),
		TruststoreLocation:              p["ssl.truststore.location"],
		TruststoreCertificates:          p["ssl.truststore.certificates"],
		EndpointIdentificationAlgorithm: or("ssl.endpoint.identification.algorithm", "https"),
	}
	if v := p["ssl.enabled.protocols"]; v != "" {
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if _, ok := config.TLSVersions[name]; !ok {
				return nil, fmt.Errorf("ssl.enabled.protocols: unknown protocol %q (want TLSv1.2 or TLSv1.3)", name)
			}
			s.EnabledProtocols = append(s.EnabledProtocols, name)
		}
	}
	return security.NewClient("client", s, slog.New(slog.DiscardHandler))
}
