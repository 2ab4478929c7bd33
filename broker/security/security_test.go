package security

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/internal/testcerts"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newCA(t *testing.T) *testcerts.CA {
	t.Helper()
	ca, err := testcerts.NewCA("Test CA")
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func issue(t *testing.T, ca *testcerts.CA, o testcerts.Options) *testcerts.Pair {
	t.Helper()
	p, err := ca.Issue(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p, err := testcerts.WriteFile(dir, name, text)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sslConfig is the ssl.* keys parsed as the broker gets them.
func sslConfig(t *testing.T, keys map[string]string) config.SSL {
	t.Helper()
	m := map[string]string{"listeners": "SSL://127.0.0.1:0", "security.inter.broker.protocol": "SSL"}
	for k, v := range keys {
		m[k] = v
	}
	b, err := config.Parse(m)
	if err != nil {
		t.Fatal(err)
	}
	return b.SSLFor("SSL")
}

// handshake runs a TLS handshake over a loopback pair and returns the
// server's connection state (or the first error of either side).
func handshake(t *testing.T, srv *Server, client *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	s, c := tls.Server(a, srv.Config()), tls.Client(b, client)
	errc := make(chan error, 1)
	go func() { errc <- c.Handshake(); _ = c.Close() }()
	serr := s.Handshake()
	if serr != nil {
		_ = a.Close()
	}
	cerr := <-errc
	if serr != nil {
		return tls.ConnectionState{}, serr
	}
	if cerr != nil {
		return tls.ConnectionState{}, cerr
	}
	return s.ConnectionState(), nil
}

// TestServerClientAuthAndPrincipal: with ssl.client.auth=required a
// client without a certificate, or with one from another CA, is refused;
// a trusted one's subject is mapped to the principal; requested lets a
// client without one in as ANONYMOUS.
func TestServerClientAuthAndPrincipal(t *testing.T) {
	ca, other := newCA(t), newCA(t)
	dir := t.TempDir()
	server := issue(t, ca, testcerts.Options{Subject: pkix.Name{CommonName: "broker"}, Hosts: []string{"localhost"}})
	alice := issue(t, ca, testcerts.Options{Subject: pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"ServiceUsers"}, Organization: []string{"Acme"}, Country: []string{"US"}}})
	mallory := issue(t, other, testcerts.Options{Subject: pkix.Name{CommonName: "mallory"}})
	expired := issue(t, ca, testcerts.Options{Subject: pkix.Name{CommonName: "old"}, NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	cfg := sslConfig(t, map[string]string{
		"ssl.keystore.type":           "PEM",
		"ssl.keystore.location":       write(t, dir, "server.pem", server.Keystore()),
		"ssl.truststore.type":         "PEM",
		"ssl.truststore.location":     write(t, dir, "ca.pem", ca.PEM),
		"ssl.client.auth":             "required",
		"ssl.principal.mapping.rules": "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT",
	})
	srv, err := NewServer("SSL", cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	client := func(p *testcerts.Pair) *tls.Config {
		c := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
		if p != nil {
			c.Certificates = []tls.Certificate{p.TLS()}
		}
		return c
	}
	if _, err := handshake(t, srv, client(nil)); err == nil {
		t.Fatal("client without a certificate accepted")
	}
	if _, err := handshake(t, srv, client(mallory)); err == nil {
		t.Fatal("client certificate of an untrusted CA accepted")
	}
	if _, err := handshake(t, srv, client(expired)); err == nil {
		t.Fatal("expired client certificate accepted")
	}
	st, err := handshake(t, srv, client(alice))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := srv.Principal(st); err != nil || p != "User:alice" {
		t.Fatalf("principal %q, %v", p, err)
	}

	cfg.ClientAuth = "requested"
	cfg.PrincipalMappingRules = "DEFAULT"
	if srv, err = NewServer("SSL", cfg, quiet); err != nil {
		t.Fatal(err)
	}
	st, err = handshake(t, srv, client(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := srv.Principal(st); p != Anonymous {
		t.Fatalf("principal without a certificate %q", p)
	}
	st, err = handshake(t, srv, client(alice))
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := srv.Principal(st); p != "User:CN=alice,OU=ServiceUsers,O=Acme,C=US" {
		t.Fatalf("principal %q", p)
	}
}

// TestKeystoreReloaded: a key store file rewritten is used by the next
// handshake after the check interval, and one that no longer parses
// leaves the last good one in use.
func TestKeystoreReloaded(t *testing.T) {
	old := reloadCheck
	reloadCheck = 0
	t.Cleanup(func() { reloadCheck = old })
	ca := newCA(t)
	dir := t.TempDir()
	first := issue(t, ca, testcerts.Options{Subject: pkix.Name{CommonName: "first"}, Hosts: []string{"localhost"}})
	second := issue(t, ca, testcerts.Options{Subject: pkix.Name{CommonName: "second"}, Hosts: []string{"localhost"}})
	path := write(t, dir, "server.pem", first.Keystore())
	srv, err := NewServer("SSL", sslConfig(t, map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": path}), quiet)
	if err != nil {
		t.Fatal(err)
	}
	served := func() string {
		t.Helper()
		var cn string
		c := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", VerifyConnection: func(st tls.ConnectionState) error {
			cn = st.PeerCertificates[0].Subject.CommonName
			return nil
		}}
		if _, err := handshake(t, srv, c); err != nil {
			t.Fatal(err)
		}
		return cn
	}
	if cn := served(); cn != "first" {
		t.Fatalf("serves %q", cn)
	}
	touch := func(text string, at time.Time) {
		t.Helper()
		write(t, dir, "server.pem", text)
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	touch(second.Keystore(), time.Now().Add(time.Minute))
	if cn := served(); cn != "second" {
		t.Fatalf("after the file changed: serves %q", cn)
	}
	touch("not PEM", time.Now().Add(2*time.Minute))
	if cn := served(); cn != "second" {
		t.Fatalf("after a broken file: serves %q", cn)
	}
}

// TestMaterialErrors: what Kafka refuses for PEM stores is refused, with
// the key named.
func TestMaterialErrors(t *testing.T) {
	ca := newCA(t)
	p := issue(t, ca, testcerts.Options{Subject: pkix.Name{CommonName: "b"}})
	dir := t.TempDir()
	ks := write(t, dir, "ks.pem", p.Keystore())
	for _, tc := range []struct {
		keys map[string]string
		want string
	}{
		{map[string]string{}, "needs a key store"},
		{map[string]string{"ssl.keystore.location": ks}, "ssl.keystore.type JKS is not supported"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": ks, "ssl.keystore.password": "x"}, "ssl.keystore.password cannot be specified with PEM"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": p.CertPEM}, "must be specified together"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": ks, "ssl.keystore.key": p.KeyPEM}, "cannot be specified with"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": ks, "ssl.key.password": "x"}, "not encrypted"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": filepath.Join(dir, "missing.pem")}, "no such file"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": ca.PEM, "ssl.keystore.key": p.KeyPEM}, "does not match"},
		{map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": ks, "ssl.truststore.location": ks}, "ssl.truststore.type JKS is not supported"},
	} {
		_, err := NewServer("SSL", sslConfig(t, tc.keys), quiet)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.keys, err, tc.want)
		}
	}
}

// TestInlinePEMOneLine: a key store given inline on one line, as a
// properties file with backslash continuations leaves it, loads.
func TestInlinePEMOneLine(t *testing.T) {
	ca := newCA(t)
	p := issue(t, ca, testcerts.Options{Subject: pkix.Name{CommonName: "b"}, Hosts: []string{"localhost"}})
	oneLine := func(s string) string { return strings.ReplaceAll(s, "\n", " ") }
	srv, err := NewServer("SSL", sslConfig(t, map[string]string{
		"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": oneLine(p.CertPEM), "ssl.keystore.key": oneLine(p.KeyPEM),
	}), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, srv, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}); err != nil {
		t.Fatal(err)
	}
}

// TestEncryptedPKCS8: a key encrypted by openssl (PBES2: PBKDF2 with
// HMAC-SHA256, AES-256-CBC; and 3DES) loads with ssl.key.password; a
// wrong password fails.
func TestEncryptedPKCS8(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed")
	}
	ca := newCA(t)
	p := issue(t, ca, testcerts.Options{Subject: pkix.Name{CommonName: "b"}})
	dir := t.TempDir()
	plain := write(t, dir, "key.pem", p.KeyPEM)
	for _, cipher := range []string{"aes-256-cbc", "aes-128-cbc", "des3"} {
		out, err := exec.Command(openssl, "pkcs8", "-topk8", "-in", plain, "-v2", cipher, "-passout", "pass:s3cret").Output()
		if err != nil {
			t.Fatalf("openssl %s: %v", cipher, err)
		}
		key, err := parseKey(string(out), "s3cret")
		if err != nil {
			t.Fatalf("%s: %v", cipher, err)
		}
		if _, err := keyPair([]*x509.Certificate{p.Cert}, key); err != nil {
			t.Fatalf("%s: %v", cipher, err)
		}
		if _, err := parseKey(string(out), "wrong"); err == nil {
			t.Fatalf("%s: wrong password accepted", cipher)
		}
		if _, err := parseKey(string(out), ""); err == nil || !strings.Contains(err.Error(), "set ssl.key.password") {
			t.Fatalf("%s: no password: %v", cipher, err)
		}
	}
}

// TestSubjectDN: the subject is written as Java's X500Principal.getName()
// does: most specific first, special characters
// escaped, unknown attributes as OID=#hex.
func TestSubjectDN(t *testing.T) {
	ca := newCA(t)
	email := asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	p := issue(t, ca, testcerts.Options{Subject: pkix.Name{
		CommonName: "Kafka, Server", Organization: []string{"Acme"}, Country: []string{"US"},
		ExtraNames: []pkix.AttributeTypeAndValue{{Type: email, Value: "a@b"}},
	}})
	got, err := SubjectDN(p.Cert)
	if err != nil {
		t.Fatal(err)
	}
	const want = `1.2.840.113549.1.9.1=#0c03614062,CN=Kafka\, Server,O=Acme,C=US`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestInlinePEMPropertiesFile: a key store written inline in a properties
// file with backslash continuations, as Kafka's docs show it, loads.
func TestInlinePEMPropertiesFile(t *testing.T) {
	ca := newCA(t)
	p := issue(t, ca, testcerts.Options{Subject: pkix.Name{CommonName: "b"}, Hosts: []string{"localhost"}})
	continued := func(s string) string {
		return strings.ReplaceAll(strings.TrimSpace(s), "\n", " \\\n  ")
	}
	props := "listeners=SSL://127.0.0.1:0\nsecurity.inter.broker.protocol=SSL\nssl.keystore.type=PEM\n" +
		"ssl.keystore.certificate.chain=" + continued(p.CertPEM) + "\n" +
		"ssl.keystore.key=" + continued(p.KeyPEM) + "\n"
	path := write(t, t.TempDir(), "server.properties", props)
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer("SSL", cfg.SSLFor("SSL"), quiet)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, srv, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}); err != nil {
		t.Fatal(err)
	}
}
