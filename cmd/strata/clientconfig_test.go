package main

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/strata-broker/strata/internal/testcerts"
)

// TestClientOptionsSASL: security.protocol, sasl.mechanism and the JAAS
// login become the client's SASL mechanism, and bad properties are
// refused with the key at fault.
func TestClientOptionsSASL(t *testing.T) {
	jaas := func(module string) string {
		return "org.apache.kafka.common.security." + module + ` required username="alice" password="pw";`
	}
	for _, tc := range []struct {
		props map[string]string
		mech  string // "" for no SASL
		err   string
	}{
		{props: map[string]string{}},
		{props: map[string]string{"security.protocol": "plaintext", "client.id": "ignored"}},
		{props: map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas("plain.PlainLoginModule")}, mech: "PLAIN"},
		{props: map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas("scram.ScramLoginModule")}, mech: "SCRAM-SHA-512"},
		{props: map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "scram-sha-256", "sasl.jaas.config": jaas("scram.ScramLoginModule")}, mech: "SCRAM-SHA-256"},
		{props: map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": jaas("plain.PlainLoginModule")}, err: `"GSSAPI" is not supported`},
		{props: map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, err: "sasl.jaas.config"},
		{props: map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": "x required password=pw;"}, err: "no username"},
		{props: map[string]string{"security.protocol": "TLS"}, err: `security.protocol "TLS"`},
		{props: map[string]string{"ssl.keystore.password": "pw"}, err: "ssl.keystore.password is not supported"},
		{props: map[string]string{"security.protocol": "SSL", "ssl.keystore.type": "JKS", "ssl.keystore.location": "k.jks"}, err: "PEM only"},
	} {
		opts, err := clientOptions(tc.props)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: %v, want %q", tc.props, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.props, err)
			continue
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if ms, ok := cl.OptValue(kgo.SASL).([]kgosasl.Mechanism); ok && len(ms) == 1 {
			got = ms[0].Name()
		}
		cl.Close()
		if got != tc.mech {
			t.Errorf("%v: mechanism %q, want %q", tc.props, got, tc.mech)
		}
	}
}

// TestClientOptionsTLS: the TLS dialer trusts ssl.truststore.* (file or
// inline PEM), checks the broker's host name unless
// ssl.endpoint.identification.algorithm is empty, and presents
// ssl.keystore.location's certificate to a broker that requires one.
func TestClientOptionsTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := testcerts.NewCA("cli-ca")
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Issue(testcerts.Options{Subject: pkix.Name{CommonName: "broker"}, Hosts: []string{"broker.example"}})
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Issue(testcerts.Options{Subject: pkix.Name{CommonName: "cli-user"}})
	if err != nil {
		t.Fatal(err)
	}
	caFile, _ := testcerts.WriteFile(dir, "ca.pem", ca.PEM)
	keystore, err := testcerts.WriteFile(dir, "client.pem", client.Keystore())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{server.TLS()},
		ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peers := make(chan string, 1) // the client certificate's CN of each handshake, "" for none
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tc := c.(*tls.Conn)
			cn := ""
			if tc.HandshakeContext(t.Context()) == nil {
				if st := tc.ConnectionState(); len(st.PeerCertificates) > 0 {
					cn = st.PeerCertificates[0].Subject.CommonName
				}
			}
			c.Close()
			peers <- cn
		}
	}()

	base := map[string]string{"security.protocol": "SSL", "ssl.truststore.location": caFile, "ssl.endpoint.identification.algorithm": ""}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		props map[string]string
		cn    string // the client certificate the broker saw
		err   string // "" when the handshake must succeed
	}{
		{name: "trust store file", props: base},
		{name: "inline trust store", props: with("ssl.truststore.location", "", "ssl.truststore.certificates", ca.PEM)},
		{name: "key store", props: with("ssl.keystore.location", keystore), cn: "cli-user"},
		{name: "host name checked", props: with("ssl.endpoint.identification.algorithm", "https"), err: "127.0.0.1"},
		{name: "system roots", props: map[string]string{"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""}, err: "unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dial, err := tlsDialer(tc.props)
			if err != nil {
				t.Fatal(err)
			}
			c, err := dial(t.Context(), "tcp", ln.Addr().String())
			if err == nil {
				err = c.(*tls.Conn).HandshakeContext(t.Context())
				c.Close()
			}
			cn := <-peers
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("dial: %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || cn != tc.cn {
				t.Errorf("dial: %v, broker saw client %q, want %q", err, cn, tc.cn)
			}
		})
	}
}
