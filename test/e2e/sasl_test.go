package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strata-broker/strata/test/harness"
)

// plainJAAS is a PlainLoginModule with the broker's own login (admin) and
// the users alice and admin.
const plainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

// saslBroker starts a broker with a PLAINTEXT listener (first, for
// admin work) and a SASL listener of protocol (SASL_PLAINTEXT or
// SASL_SSL) with mechanisms; it returns the broker, the SASL listener's
// address and the metrics listener's.
func saslBroker(t *testing.T, protocol, mechanisms string, extra map[string]string) (*harness.Broker, string, string) {
	t.Helper()
	cfg := map[string]string{
		"listeners":                                 "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0",
		"listener.security.protocol.map":            "PLAINTEXT:PLAINTEXT,SASL:" + protocol,
		"inter.broker.listener.name":                "PLAINTEXT",
		"sasl.enabled.mechanisms":                   mechanisms,
		"listener.name.sasl.plain.sasl.jaas.config": plainJAAS,
	}
	for k, v := range extra {
		cfg[k] = v
	}
	b, metrics := startMeteredWith(t, cfg)
	return b, b.Server().ListenerAddr("SASL"), metrics
}

// createScramUser sets user's password for mechanism (kadm's
// AlterUserScramCredentials, which salts and hashes it client-side).
func createScramUser(t *testing.T, adm *kadm.Client, user, password string, mech kadm.ScramMechanism) {
	t.Helper()
	res, err := adm.AlterUserSCRAMs(testCtx(t), nil, []kadm.UpsertSCRAM{{User: user, Mechanism: mech, Iterations: 4096, Password: password}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Error(); err != nil {
		t.Fatal(err)
	}
}

// authFails asserts that a client with mech is refused with
// SASL_AUTHENTICATION_FAILED.
func authFails(t *testing.T, addr string, mech sasl.Mechanism, opts ...kgo.Opt) {
	t.Helper()
	err := pingFails(t, harness.NewClient(t, addr, append(opts, kgo.SASL(mech))...))
	if !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
		t.Fatalf("%s: %v, want SASL_AUTHENTICATION_FAILED", mech.Name(), err)
	}
}

// TestSASLScramFranzGo: SCRAM-SHA-256 credentials created through
// AlterUserScramCredentials authenticate franz-go, which produces and
// consumes; a wrong password and an unknown user are refused, logged and
// counted; Describe lists the credential.
func TestSASLScramFranzGo(t *testing.T) {
	b, addr, metrics := saslBroker(t, "SASL_PLAINTEXT", "SCRAM-SHA-256,PLAIN", nil)
	adm := b.Admin()
	createScramUser(t, adm, "alice", "alice-pw", kadm.ScramSha256)

	desc, err := adm.DescribeUserSCRAMs(testCtx(t), "alice")
	if err != nil || desc.Error() != nil {
		t.Fatalf("describe: %v %v", err, desc.Error())
	}
	if d := desc["alice"]; len(d.CredInfos) != 1 || d.CredInfos[0].Mechanism != kadm.ScramSha256 || d.CredInfos[0].Iterations != 4096 {
		t.Fatalf("described %+v", d)
	}

	const topic = "scram-topic"
	mech := scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()
	cl := harness.NewClient(t, addr, kgo.SASL(mech), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	produceSync(t, cl, &kgo.Record{Value: []byte("over scram")})
	if n := countRecords(harness.ReadAll(t, addr, topic, kgo.SASL(mech))); n != 1 {
		t.Fatalf("read %d records, want 1", n)
	}

	authFails(t, addr, scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism())
	waitLog(t, b, "failed authentication", "alice", "remote=127.0.0.1")
	authFails(t, addr, scram.Auth{User: "mallory", Pass: "x"}.AsSha256Mechanism())
	authFails(t, addr, plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism())
	if n := metricValue(t, metrics, `strata_failed_authentication_total{listener="SASL"}`); n < 3 {
		t.Fatalf("strata_failed_authentication_total %d, want at least 3", n)
	}
	// PLAIN (JAAS users) on the same listener.
	produceSync(t, harness.NewClient(t, addr, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.DefaultProduceTopic(topic)), &kgo.Record{Value: []byte("over plain")})
}

// TestSASLRequestBeforeHandshake: a Metadata request on a SASL listener
// before authentication closes the connection without an answer.
func TestSASLRequestBeforeHandshake(t *testing.T) {
	b, addr, _ := saslBroker(t, "SASL_PLAINTEXT", "PLAIN", nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, 1)
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 4))
	if err != io.EOF || n != 0 {
		t.Fatalf("read %d bytes, %v; want the connection closed", n, err)
	}
	waitLog(t, b, "closing connection", "Metadata before SASL authentication")
}

// TestSASLRequestAfterHandshake: a request other than SaslAuthenticate
// after SaslHandshake is answered with ILLEGAL_SASL_STATE, as Kafka
// answers it, and the connection is then closed.
func TestSASLRequestAfterHandshake(t *testing.T) {
	b, addr, _ := saslBroker(t, "SASL_PLAINTEXT", "PLAIN", nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if r := rawRequest(t, c, hs, 1).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("handshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKey = 2, "g"
	if r := rawRequest(t, c, fc, 2).(*kmsg.FindCoordinatorResponse); r.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("FindCoordinator after SaslHandshake: %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(r.ErrorCode))
	}
	n, err := c.Read(make([]byte, 4))
	if err != io.EOF || n != 0 {
		t.Fatalf("read %d bytes, %v; want the connection closed", n, err)
	}
	waitLog(t, b, "ILLEGAL_SASL_STATE", "FindCoordinator during SASL authentication")
}

// jwtIssuer signs OAUTHBEARER tokens with an EC key whose JWKS it writes
// to a file.
type jwtIssuer struct {
	key  *ecdsa.PrivateKey
	jwks string
}

func newJWTIssuer(t *testing.T) *jwtIssuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	doc := fmt.Sprintf(`{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","alg":"ES256","use":"sig","x":%q,"y":%q}]}`, b64(pub[1:33]), b64(pub[33:]))
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return &jwtIssuer{key: key, jwks: path}
}

func (j *jwtIssuer) token(t *testing.T, sub, aud string, exp time.Time) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"sub": sub, "iss": "https://issuer.test", "aud": aud, "iat": time.Now().Add(-time.Minute).Unix(), "exp": exp.Unix(),
	})
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(j.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSASLOAuthBearer: a JWT signed by a key of the configured JWKS, for
// the expected issuer and audience, authenticates franz-go as its sub;
// with connections.max.reauth.ms the session lifetime is the shorter of
// it and the token's; a token for another audience or expired is refused.
func TestSASLOAuthBearer(t *testing.T) {
	j := newJWTIssuer(t)
	_, addr, _ := saslBroker(t, "SASL_PLAINTEXT", "OAUTHBEARER", map[string]string{
		"sasl.oauthbearer.jwks.endpoint.url": "file://" + j.jwks,
		"sasl.oauthbearer.expected.issuer":   "https://issuer.test",
		"sasl.oauthbearer.expected.audience": "strata",
		"connections.max.reauth.ms":          "3600000",
	})
	good := j.token(t, "svc-orders", "strata", time.Now().Add(10*time.Minute))
	const topic = "oauth-topic"
	cl := harness.NewClient(t, addr, kgo.SASL(oauth.Auth{Token: good}.AsMechanism()), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation())
	produceSync(t, cl, &kgo.Record{Value: []byte("over oauth")})

	// The session lifetime, on a raw exchange.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "OAUTHBEARER"
	rawRequest(t, c, hs, 1)
	_, first, err := oauth.Auth{Token: good}.AsMechanism().Authenticate(testCtx(t), addr)
	if err != nil {
		t.Fatal(err)
	}
	ar := kmsg.NewPtrSASLAuthenticateRequest()
	ar.Version, ar.SASLAuthBytes = 1, first
	resp := rawRequest(t, c, ar, 2).(*kmsg.SASLAuthenticateResponse)
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis <= 0 || resp.SessionLifetimeMillis > 10*60*1000 {
		t.Fatalf("authenticate: code %d, session lifetime %d ms; want at most the token's 10 minutes", resp.ErrorCode, resp.SessionLifetimeMillis)
	}

	authFails(t, addr, oauth.Auth{Token: j.token(t, "svc-orders", "other", time.Now().Add(10*time.Minute))}.AsMechanism())
	authFails(t, addr, oauth.Auth{Token: j.token(t, "svc-orders", "strata", time.Now().Add(-10*time.Minute))}.AsMechanism())
}

// rawRequest sends req at version v on c and reads its response.
func rawRequest(t *testing.T, c net.Conn, req kmsg.Request, corr int32) kmsg.Response {
	t.Helper()
	if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, corr)); err != nil {
		t.Fatal(err)
	}
	return readResponse(t, c, req, 10*time.Second)
}

// readResponse reads the next response on c as the response to req,
// waiting at most wait for it.
func readResponse(t *testing.T, c net.Conn, req kmsg.Request, wait time.Duration) kmsg.Response {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(wait))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("%s response: %v", kmsg.NameForKey(req.Key()), err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, body); err != nil {
		t.Fatal(err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	rest := body[4:]
	if resp.IsFlexible() {
		rest = rest[1:] // no tags in our responses' headers
	}
	if err := resp.ReadFrom(rest); err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestSASLKcatScramSSL: kcat (librdkafka) authenticates with
// SCRAM-SHA-512 over SASL_SSL and produces and consumes.
func TestSASLKcatScramSSL(t *testing.T) {
	f := newTLSFixture(t)
	b, addr, _ := saslBroker(t, "SASL_SSL", "SCRAM-SHA-512", map[string]string{
		"ssl.keystore.type": "PEM", "ssl.keystore.location": f.keystore,
	})
	createScramUser(t, b.Admin(), "carol", "carol-pw", kadm.ScramSha512)
	const topic = "kcat-scram"
	harness.CreateTopic(t, b.Admin(), topic, 1, nil)
	kc := []string{"-b", addr, "-X", "security.protocol=sasl_ssl", "-X", "ssl.ca.location=" + f.caFile,
		"-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=carol", "-X", "sasl.password=carol-pw"}
	harness.KcatStdin(t, "k:over kcat\n", append([]string{"-P", "-t", topic, "-K", ":"}, kc...)...)
	out := harness.Kcat(t, append([]string{"-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k=%s\n"}, kc...)...)
	if out != "k=over kcat\n" {
		t.Fatalf("kcat read %q", out)
	}
}

const pythonPlainSSL = `
import sys
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
addr, topic, cafile = sys.argv[1], sys.argv[2], sys.argv[3]
sec = dict(bootstrap_servers=addr, security_protocol='SASL_SSL', ssl_cafile=cafile, ssl_check_hostname=False,
           sasl_mechanism='PLAIN', sasl_plain_username='alice', sasl_plain_password='alice-secret')
p = KafkaProducer(acks='all', **sec)
p.send(topic, b'over kafka-python').get(30)
p.close(10)
c = KafkaConsumer(group_id=None, auto_offset_reset='earliest', consumer_timeout_ms=5000, **sec)
c.assign([TopicPartition(topic, 0)])
c.seek_to_beginning()
print(sum(1 for _ in c))
c.close()
`

// TestSASLKafkaPythonPlainSSL: kafka-python authenticates with PLAIN over
// SASL_SSL (SaslHandshake v0 and bare tokens) and produces and consumes.
func TestSASLKafkaPythonPlainSSL(t *testing.T) {
	f := newTLSFixture(t)
	b, addr, _ := saslBroker(t, "SASL_SSL", "PLAIN", map[string]string{
		"ssl.keystore.type": "PEM", "ssl.keystore.location": f.keystore,
	})
	const topic = "py-plain"
	harness.CreateTopic(t, b.Admin(), topic, 1, nil)
	if out := strings.TrimSpace(harness.Python(t, pythonPlainSSL, addr, topic, f.caFile)); out != "1" {
		t.Fatalf("kafka-python read %q records, want 1", out)
	}
}

// TestSASLInterBrokerReplication: three brokers whose inter-broker
// listener is SASL_SSL replicate acks=all with min.insync.replicas=3 to
// identical replicas, the brokers logging in with PLAIN (a JAAS user) or
// SCRAM-SHA-512 (a credential created first through the PLAINTEXT
// listener).
func TestSASLInterBrokerReplication(t *testing.T) {
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) { saslReplication(t, mech) })
	}
}

// saslSSLCluster starts three brokers whose inter-broker listener,
// INTERNAL, is SASL_SSL with mech (clients use PLAINTEXT).
func saslSSLCluster(t *testing.T, f *tlsFixture, mech string) []*harness.Broker {
	t.Helper()
	jaasKey := "listener.name.internal." + strings.ToLower(mech) + ".sasl.jaas.config"
	jaas := plainJAAS
	if mech != "PLAIN" {
		jaas = `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-pw";`
	}
	return startClusterWith(t, 3, func(int) map[string]string {
		return map[string]string{
			"listeners":                                      "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
			"listener.security.protocol.map":                 "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
			"inter.broker.listener.name":                     "INTERNAL",
			"sasl.enabled.mechanisms":                        mech,
			"sasl.mechanism.inter.broker.protocol":           mech,
			jaasKey:                                          jaas,
			"listener.name.internal.ssl.keystore.type":       "PEM",
			"listener.name.internal.ssl.keystore.location":   f.keystore,
			"listener.name.internal.ssl.truststore.type":     "PEM",
			"listener.name.internal.ssl.truststore.location": f.caFile,
		}
	})
}

func saslReplication(t *testing.T, mech string) {
	f := newTLSFixture(t)
	bs := saslSSLCluster(t, f, mech)
	client := plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()
	if mech != "PLAIN" {
		createScramUser(t, bs[0].Admin(), "broker", "broker-pw", kadm.ScramSha512)
		client = scram.Auth{User: "broker", Pass: "broker-pw"}.AsSha512Mechanism()
	}
	const topic = "sasl-repl"
	resp, err := bs[0].Admin().CreateTopic(testCtx(t), 2, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("3")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	cl := bs[0].Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 50 {
		produceSync(t, cl, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: fmt.Appendf(nil, "value-%d", i)})
	}
	waitUntil(t, "three identical replicas", 20*time.Second, func() bool { return replicasIdentical(t, bs, topic, 2) })
	// A client of the SASL_SSL listener authenticates too.
	ssl := bs[1].Server().ListenerAddr("INTERNAL")
	if n := countRecords(harness.ReadAll(t, ssl, topic, kgo.DialTLSConfig(&tls.Config{RootCAs: f.ca.Pool()}), kgo.SASL(client))); n != 50 {
		t.Fatalf("read %d records over SASL_SSL, want 50", n)
	}
	for _, b := range bs {
		if strings.Contains(b.Log(), "failed authentication") {
			t.Fatalf("a broker refused an authentication:\n%s", b.Log())
		}
	}
}

// TestSASLInterBrokerFailover: on a cluster replicating over SASL_SSL,
// stopping a partition's leader moves it to a follower and acks=all
// produce goes on (min.insync.replicas=2); the old leader, restarted,
// catches up over SASL_SSL, rejoins the ISR and holds the same log.
func TestSASLInterBrokerFailover(t *testing.T) {
	bs := saslSSLCluster(t, newTLSFixture(t), "PLAIN")
	const topic = "sasl-failover"
	resp, err := bs[0].Admin().CreateTopic(testCtx(t), 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	cl := harness.NewClient(t, bs[0].Addr(), kgo.SeedBrokers(seeds(bs)...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			produceSync(t, cl, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: fmt.Appendf(nil, "value-%d", i)})
		}
	}
	produce(0, 30)
	waitFullISR(t, adm, topic, 3)
	leader := topicDetail(t, adm, topic).Partitions[0].Leader
	bs[leader-1].Stop()
	waitUntil(t, "a new leader", 30*time.Second, func() bool {
		l := topicDetail(t, adm, topic).Partitions[0].Leader
		return l > 0 && l != leader
	})
	produce(30, 60)
	bs[leader-1].Restart()
	waitFullISR(t, adm, topic, 3)
	produce(60, 70)
	waitUntil(t, "three identical replicas", 30*time.Second, func() bool { return replicasIdentical(t, bs, topic, 1) })
	if n := countRecords(harness.ReadAll(t, bs[0].Addr(), topic)); n != 70 {
		t.Fatalf("read %d records, want 70", n)
	}
	for _, b := range bs {
		if strings.Contains(b.Log(), "failed authentication") {
			t.Fatalf("a broker refused an authentication:\n%s", b.Log())
		}
	}
}

// TestSASLReauthentication (KIP-368): with connections.max.reauth.ms,
// franz-go re-authenticates its connections before their sessions end
// and keeps producing on them; a raw connection that lets its session
// end is closed at its next request other than SaslHandshake.
func TestSASLReauthentication(t *testing.T) {
	b, addr, _ := saslBroker(t, "SASL_PLAINTEXT", "PLAIN", map[string]string{"connections.max.reauth.ms": "1000"})
	const topic = "reauth"
	harness.CreateTopic(t, b.Admin(), topic, 1, nil)
	cl := harness.NewClient(t, addr, kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()), kgo.DefaultProduceTopic(topic))
	start := time.Now()
	n := 0
	for time.Since(start) < 3500*time.Millisecond && n < 10000 { // three sessions and more
		produceSync(t, cl, &kgo.Record{Value: []byte(strconv.Itoa(n))})
		n++
	}
	if strings.Contains(b.Log(), "after the SASL session expired") {
		t.Fatalf("franz-go's connection was closed at the end of its session:\n%s", b.Log())
	}

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	rawRequest(t, c, hs, 1)
	ar := kmsg.NewPtrSASLAuthenticateRequest()
	ar.Version, ar.SASLAuthBytes = 1, []byte("\x00alice\x00alice-secret")
	resp := rawRequest(t, c, ar, 2).(*kmsg.SASLAuthenticateResponse)
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 1000 {
		t.Fatalf("authenticate: code %d, session lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	ended := time.Now().Add(time.Second)
	waitUntil(t, "the session's end", 5*time.Second, func() bool { return time.Now().After(ended) })
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 9
	if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, md, 3)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 4)); err != io.EOF || n != 0 {
		t.Fatalf("read %d bytes, %v; want the connection closed", n, err)
	}
	waitLog(t, b, "closing connection", "after the SASL session expired")
}
