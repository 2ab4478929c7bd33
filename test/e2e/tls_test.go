package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/internal/testcerts"
	"github.com/strata-broker/strata/test/harness"
)

// tlsFixture is a test CA and the files a broker's SSL listener needs:
// its key store (a certificate for 127.0.0.1 and localhost) and the CA as
// trust store.
type tlsFixture struct {
	ca               *testcerts.CA
	dir              string
	keystore, caFile string
}

func newTLSFixture(t *testing.T) *tlsFixture {
	t.Helper()
	ca, err := testcerts.NewCA("Strata Test CA")
	if err != nil {
		t.Fatal(err)
	}
	f := &tlsFixture{ca: ca, dir: t.TempDir()}
	server := f.issue(t, testcerts.Options{Subject: pkix.Name{CommonName: "broker"}, Hosts: []string{"127.0.0.1", "localhost"}})
	f.keystore = f.write(t, "server.pem", server.Keystore())
	f.caFile = f.write(t, "ca.pem", ca.PEM)
	return f
}

func (f *tlsFixture) issue(t *testing.T, o testcerts.Options) *testcerts.Pair {
	t.Helper()
	p, err := f.ca.Issue(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *tlsFixture) write(t *testing.T, name, text string) string {
	t.Helper()
	p, err := testcerts.WriteFile(f.dir, name, text)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sslKeys are the keys of a broker whose only listener is SSL.
func (f *tlsFixture) sslKeys(extra map[string]string) map[string]string {
	m := map[string]string{
		"listeners":                      "SSL://127.0.0.1:0",
		"security.inter.broker.protocol": "SSL",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.location":          f.keystore,
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.location":        f.caFile,
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// client is a franz-go client trusting the fixture's CA, presenting cert
// if set (even when the broker names CAs that did not sign it, so that an
// untrusted certificate reaches the broker's check).
func (f *tlsFixture) client(t *testing.T, addr string, cert *testcerts.Pair, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	c := &tls.Config{RootCAs: f.ca.Pool()}
	if cert != nil {
		tc := cert.TLS()
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tc, nil }
	}
	return harness.NewClient(t, addr, append([]kgo.Opt{kgo.DialTLSConfig(c)}, opts...)...)
}

// pingFails asserts that a client cannot complete a request, and returns
// the error.
func pingFails(t *testing.T, cl *kgo.Client) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := cl.Ping(ctx)
	if err == nil {
		t.Fatal("request succeeded, want it refused")
	}
	return err
}

// waitLog waits until the broker logged a line holding every one of parts.
func waitLog(t *testing.T, b *harness.Broker, parts ...string) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("broker log line with %q", parts), 10*time.Second, func() bool {
		for _, line := range strings.Split(b.Log(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return true
			}
		}
		return false
	})
}

// TestTLSFranzGoAndKcat: a broker whose only listener is SSL, with a
// certificate of a private CA, serves franz-go trusting that CA and kcat
// (librdkafka) with security.protocol=ssl and ssl.ca.location; a client
// that does not trust the CA is refused.
func TestTLSFranzGoAndKcat(t *testing.T) {
	f := newTLSFixture(t)
	b := harness.Start(t, f.sslKeys(nil))
	const topic = "tls-topic"
	cl := f.client(t, b.Addr(), nil, kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic), kgo.AllowAutoTopicCreation())
	produceSync(t, cl, &kgo.Record{Key: []byte("k1"), Value: []byte("over franz-go")})

	harness.KcatStdin(t, "k2:over kcat\n", "-P", "-b", b.Addr(), "-t", topic, "-K", ":",
		"-X", "security.protocol=ssl", "-X", "ssl.ca.location="+f.caFile)
	out := harness.Kcat(t, "-C", "-b", b.Addr(), "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k=%s\n",
		"-X", "security.protocol=ssl", "-X", "ssl.ca.location="+f.caFile)
	if out != "k1=over franz-go\nk2=over kcat\n" {
		t.Fatalf("kcat read %q", out)
	}
	recs := harness.ReadAll(t, b.Addr(), topic, kgo.DialTLSConfig(&tls.Config{RootCAs: f.ca.Pool()}))
	if n := countRecords(recs); n != 2 {
		t.Fatalf("franz-go read %d records, want 2", n)
	}

	other, err := testcerts.NewCA("Other CA")
	if err != nil {
		t.Fatal(err)
	}
	untrusting := harness.NewClient(t, b.Addr(), kgo.DialTLSConfig(&tls.Config{RootCAs: other.Pool()}))
	if err := pingFails(t, untrusting); !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Fatalf("client not trusting the CA: %v", err)
	}
}

// TestTLSExpiredServerCertificate: a broker serving an expired
// certificate is refused by the client.
func TestTLSExpiredServerCertificate(t *testing.T) {
	f := newTLSFixture(t)
	old := f.issue(t, testcerts.Options{Subject: pkix.Name{CommonName: "broker"}, Hosts: []string{"127.0.0.1"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	b := harness.Start(t, f.sslKeys(map[string]string{"ssl.keystore.location": f.write(t, "expired.pem", old.Keystore())}))
	if err := pingFails(t, f.client(t, b.Addr(), nil)); !strings.Contains(err.Error(), "expired") {
		t.Fatalf("expired server certificate: %v", err)
	}
}

// TestTLSClientAuthRequired: with ssl.client.auth=required, a client
// without a certificate, with one of another CA, or with an expired one
// is refused in the handshake (logged with its address); franz-go and
// kcat with a certificate of the trusted CA are served.
func TestTLSClientAuthRequired(t *testing.T) {
	f := newTLSFixture(t)
	b := harness.Start(t, f.sslKeys(map[string]string{"ssl.client.auth": "required"}))

	pingFails(t, f.client(t, b.Addr(), nil))
	waitLog(t, b, "TLS handshake failed", "client didn't provide a certificate")

	other, err := testcerts.NewCA("Other CA")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := other.Issue(testcerts.Options{Subject: pkix.Name{CommonName: "stranger"}})
	if err != nil {
		t.Fatal(err)
	}
	pingFails(t, f.client(t, b.Addr(), stranger))
	waitLog(t, b, "TLS handshake failed", "unknown authority")

	expired := f.issue(t, testcerts.Options{Subject: pkix.Name{CommonName: "old"},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	pingFails(t, f.client(t, b.Addr(), expired))
	waitLog(t, b, "TLS handshake failed", "expired")

	alice := f.issue(t, testcerts.Options{Subject: pkix.Name{CommonName: "alice", Organization: []string{"Acme"}}})
	cl := f.client(t, b.Addr(), alice, kgo.DefaultProduceTopic("mtls"), kgo.AllowAutoTopicCreation())
	produceSync(t, cl, &kgo.Record{Value: []byte("from franz-go")})

	// kcat (librdkafka) with a client certificate.
	ssl := []string{"-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + f.caFile,
		"-X", "ssl.certificate.location=" + f.write(t, "alice.crt", alice.CertPEM),
		"-X", "ssl.key.location=" + f.write(t, "alice.key", alice.KeyPEM)}
	harness.KcatStdin(t, "from kcat\n", append([]string{"-P", "-b", b.Addr(), "-t", "mtls"}, ssl...)...)
	out := harness.Kcat(t, append([]string{"-C", "-b", b.Addr(), "-t", "mtls", "-o", "beginning", "-e", "-q"}, ssl...)...)
	if out != "from franz-go\nfrom kcat\n" {
		t.Fatalf("kcat with a client certificate read %q", out)
	}
}

// TestTLSPortRefusesPlaintext: Kafka bytes sent in plaintext to an SSL
// listener close the connection, the broker logs it and goes on serving
// TLS clients.
func TestTLSPortRefusesPlaintext(t *testing.T) {
	f := newTLSFixture(t)
	b := harness.Start(t, f.sslKeys(nil))
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("plain")).AppendRequest(nil, req, 1)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	// Go's TLS server may answer with an alert record before it closes; no
	// Kafka response comes.
	rest, err := bufio.NewReader(c).ReadString(0)
	if err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("connection still open after plaintext bytes (read %q, %v)", rest, err)
	}
	waitLog(t, b, "TLS handshake failed", "first record does not look like a TLS handshake")
	produceSync(t, f.client(t, b.Addr(), nil, kgo.DefaultProduceTopic("after"), kgo.AllowAutoTopicCreation()), &kgo.Record{Value: []byte("v")})
}

// TestTwoListenersMetadata: a broker with a PLAINTEXT and an SSL
// listener, advertised under different host names, answers Metadata,
// DescribeCluster and FindCoordinator on each with that listener's own
// address, and clients of both produce and consume.
func TestTwoListenersMetadata(t *testing.T) {
	f := newTLSFixture(t)
	b := harness.Start(t, f.sslKeys(map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"advertised.listeners":           "PLAINTEXT://127.0.0.1:0,SSL://localhost:0",
		"security.inter.broker.protocol": "PLAINTEXT",
	}))
	plainAddr, sslAddr := b.Server().ListenerAddr("PLAINTEXT"), b.Server().ListenerAddr("SSL")
	_, sslPort, _ := net.SplitHostPort(sslAddr)
	wantSSL := net.JoinHostPort("localhost", sslPort)
	if plainAddr != b.Addr() || sslAddr == "" || sslAddr == plainAddr {
		t.Fatalf("listener addresses %q, %q (Addr %q)", plainAddr, sslAddr, b.Addr())
	}
	for _, tc := range []struct {
		name string
		cl   *kgo.Client
		want string
	}{
		{"PLAINTEXT", harness.NewClient(t, plainAddr), plainAddr},
		{"SSL", f.client(t, sslAddr, nil), wantSSL},
	} {
		ctx := testCtx(t)
		md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, tc.cl)
		if err != nil {
			t.Fatalf("%s: metadata: %v", tc.name, err)
		}
		if len(md.Brokers) != 1 || net.JoinHostPort(md.Brokers[0].Host, strconv.Itoa(int(md.Brokers[0].Port))) != tc.want {
			t.Fatalf("%s: metadata brokers %+v, want %s", tc.name, md.Brokers, tc.want)
		}
		dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, tc.cl)
		if err != nil || len(dc.Brokers) != 1 || net.JoinHostPort(dc.Brokers[0].Host, strconv.Itoa(int(dc.Brokers[0].Port))) != tc.want {
			t.Fatalf("%s: describe cluster %+v, %v; want %s", tc.name, dc, err, tc.want)
		}
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey = "g"
		waitUntil(t, tc.name+" coordinator", 20*time.Second, func() bool {
			resp, err := fc.RequestWith(ctx, tc.cl)
			if err != nil || resp.ErrorCode != 0 {
				return false
			}
			if got := net.JoinHostPort(resp.Host, strconv.Itoa(int(resp.Port))); got != tc.want {
				t.Fatalf("%s: coordinator at %s, want %s", tc.name, got, tc.want)
			}
			return true
		})
	}
	const topic = "two-listeners"
	adm := kadm.NewClient(harness.NewClient(t, plainAddr))
	harness.CreateTopic(t, adm, topic, 1, nil)
	produceSync(t, harness.NewClient(t, plainAddr, kgo.DefaultProduceTopic(topic)), &kgo.Record{Value: []byte("plain")})
	produceSync(t, f.client(t, sslAddr, nil, kgo.DefaultProduceTopic(topic)), &kgo.Record{Value: []byte("tls")})
	if n := countRecords(harness.ReadAll(t, sslAddr, topic, kgo.DialTLSConfig(&tls.Config{RootCAs: f.ca.Pool()}))); n != 2 {
		t.Fatalf("read %d records over SSL, want 2", n)
	}
}

// TestTLSInterBrokerReplication: three brokers whose inter-broker
// listener is SSL with client certificates required replicate: acks=all
// with min.insync.replicas=3 succeeds and the replicas end identical; a
// broker that stops leaves the ISRs, acks=all goes on, and once restarted
// it catches up and rejoins them.
func TestTLSInterBrokerReplication(t *testing.T) {
	f := newTLSFixture(t)
	bs := startClusterWith(t, 3, func(int) map[string]string {
		return map[string]string{
			"listeners":                                      "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
			"listener.security.protocol.map":                 "PLAINTEXT:PLAINTEXT,INTERNAL:SSL",
			"inter.broker.listener.name":                     "INTERNAL",
			"listener.name.internal.ssl.keystore.type":       "PEM",
			"listener.name.internal.ssl.keystore.location":   f.keystore,
			"listener.name.internal.ssl.truststore.type":     "PEM",
			"listener.name.internal.ssl.truststore.location": f.caFile,
			"listener.name.internal.ssl.client.auth":         "required",
		}
	})
	const topic = "tls-repl"
	ctx := testCtx(t)
	resp, err := bs[0].Admin().CreateTopic(ctx, 2, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("3")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	cl := bs[0].Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 100 {
		produceSync(t, cl, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: fmt.Appendf(nil, "value-%d", i)})
	}
	waitUntil(t, "three identical replicas", 20*time.Second, func() bool { return replicasIdentical(t, bs, topic, 2) })

	// Failover: broker 3 stops (its leaderships move), acks=all goes on
	// with two replicas; restarted on new ports, it catches up over TLS.
	const failover = "tls-failover"
	resp, err = bs[0].Admin().CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, failover)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	fcl := bs[0].Client(kgo.DefaultProduceTopic(failover), kgo.RequiredAcks(kgo.AllISRAcks()))
	produceN := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			produceSync(t, fcl, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: fmt.Appendf(nil, "value-%d", i)})
		}
	}
	produceN(0, 60)
	adm := bs[0].Admin()
	bs[2].Stop()
	waitUntil(t, "ISR without broker 3", 20*time.Second, func() bool {
		for _, s := range isr(t, adm, failover) {
			if slices.Contains(s, 3) {
				return false
			}
		}
		return true
	})
	produceN(60, 120)
	bs[2].Restart()
	waitUntil(t, "broker 3 back in every ISR", 30*time.Second, func() bool {
		for _, s := range isr(t, adm, failover) {
			if !slices.Contains(s, 3) {
				return false
			}
		}
		return true
	})
	waitUntil(t, "identical replicas after catch-up", 20*time.Second, func() bool { return replicasIdentical(t, bs, failover, 3) })
	if got := countRecords(harness.ReadAll(t, bs[0].Addr(), failover)); got != 120 {
		t.Fatalf("read %d records, want 120", got)
	}
	for _, b := range bs {
		if strings.Contains(b.Log(), "TLS handshake failed") {
			t.Fatalf("a broker refused a TLS handshake:\n%s", b.Log())
		}
	}
}

// TestTLSCertificateReload: replacing the key store file makes new
// handshakes use the new certificate, without a restart.
func TestTLSCertificateReload(t *testing.T) {
	f := newTLSFixture(t)
	first := f.issue(t, testcerts.Options{Subject: pkix.Name{CommonName: "first"}, Hosts: []string{"127.0.0.1"}})
	path := f.write(t, "rotating.pem", first.Keystore())
	b := harness.Start(t, f.sslKeys(map[string]string{"ssl.keystore.location": path}))
	served := func() string {
		c, err := tls.Dial("tcp", b.Addr(), &tls.Config{RootCAs: f.ca.Pool()})
		if err != nil {
			t.Fatalf("TLS dial: %v", err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := served(); cn != "first" {
		t.Fatalf("serves %q, want first", cn)
	}
	second := f.issue(t, testcerts.Options{Subject: pkix.Name{CommonName: "second"}, Hosts: []string{"127.0.0.1"}})
	tmp := f.write(t, "rotating.pem.new", second.Keystore())
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the new certificate served", 20*time.Second, func() bool { return served() == "second" })
	produceSync(t, f.client(t, b.Addr(), nil, kgo.DefaultProduceTopic("rotated"), kgo.AllowAutoTopicCreation()), &kgo.Record{Value: []byte("v")})
}
