package etcdstore

import (
	"context"
	"crypto/x509/pkix"
	"errors"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/strata-broker/strata/internal/testcerts"
	"github.com/strata-broker/strata/metadata"
)

// refusedWithin bounds an Open that etcd refuses: a refused TLS handshake
// looks like an unreachable etcd, which Open waits out until its context
// ends.
const refusedWithin = 3 * time.Second

// startSecureEtcd starts a real etcd server on loopback, changed by
// configure (its TLS), and returns its client endpoint as host:port.
func startSecureEtcd(t *testing.T, scheme string, configure func(*embed.Config)) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	client := url.URL{Scheme: scheme, Host: "127.0.0.1:0"}
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	configure(cfg)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd: %v", err)
	case <-testCtx(t).Done():
		t.Fatal("etcd not ready")
	}
	return e.Clients[0].Addr().String()
}

// openSecure opens a store with opts and closes it when the test ends.
func openSecure(t *testing.T, ctx context.Context, endpoint string, opts ...Option) (*Store, error) {
	t.Helper()
	s, err := Open(ctx, []string{endpoint}, "/strata-secure", testLogger(), opts...)
	if err == nil {
		t.Cleanup(func() { _ = s.Close() })
	}
	return s, err
}

// TestOpenTLSClientCert: against an etcd that requires a client
// certificate, Open with the CA and a certificate works, and without the
// certificate it does not.
func TestOpenTLSClientCert(t *testing.T) {
	dir := t.TempDir()
	ca, err := testcerts.NewCA("etcd-ca")
	if err != nil {
		t.Fatal(err)
	}
	server, err := ca.Issue(testcerts.Options{Subject: pkix.Name{CommonName: "etcd"}, Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	client, err := ca.Issue(testcerts.Options{Subject: pkix.Name{CommonName: "strata"}})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"ca.pem": ca.PEM, "server.pem": server.CertPEM, "server-key.pem": server.KeyPEM,
		"client.pem": client.CertPEM, "client-key.pem": client.KeyPEM}
	path := map[string]string{}
	for name, text := range files {
		if path[name], err = testcerts.WriteFile(dir, name, text); err != nil {
			t.Fatal(err)
		}
	}
	ep := startSecureEtcd(t, "https", func(c *embed.Config) {
		c.ClientTLSInfo = transport.TLSInfo{CertFile: path["server.pem"], KeyFile: path["server-key.pem"],
			TrustedCAFile: path["ca.pem"], ClientCertAuth: true}
	})

	s, err := openSecure(t, testCtx(t), ep, WithTLSFiles(path["ca.pem"], path["client.pem"], path["client-key.pem"]))
	if err != nil {
		t.Fatalf("Open with a client certificate: %v", err)
	}
	if s.ClusterID() == "" {
		t.Error("no cluster id")
	}
	// Health goes over the same TLS settings: a plain HTTP check of this
	// endpoint would fail.
	if h := s.Health(testCtx(t)); len(h) != 1 || !h[0].Healthy || !h[0].Leader || h[0].Version == "" {
		t.Errorf("Health over TLS: %+v", h)
	}
	if _, err := openSecure(t, testCtx(t), "https://"+ep, WithTLSFiles(path["ca.pem"], path["client.pem"], path["client-key.pem"])); err != nil {
		t.Errorf("Open https:// endpoint: %v", err)
	}

	ctx, cancel := context.WithTimeout(testCtx(t), refusedWithin)
	defer cancel()
	if _, err := openSecure(t, ctx, ep, WithTLSFiles(path["ca.pem"], "", "")); err == nil {
		t.Error("Open without a client certificate succeeded")
	}
	if _, err := openSecure(t, testCtx(t), ep, WithTLSFiles(path["client-key.pem"], "", "")); err == nil {
		t.Error("a CA file without certificates is accepted")
	}
}

// TestOpenAuth: against an etcd with authentication enabled, Open logs in
// with the right password and fails at once, not as an outage, without
// it.
func TestOpenAuth(t *testing.T) {
	// The lowest bcrypt cost: each login hashes the password, and at
	// etcd's default cost a loaded machine can spend the whole dial
	// timeout on it.
	ep := startSecureEtcd(t, "http", func(c *embed.Config) { c.BcryptCost = 4 }) // bcrypt.MinCost
	ctx := testCtx(t)
	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: dialTimeout, Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.UserAdd(ctx, "root", "r00t"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}

	s, err := openSecure(t, ctx, ep, WithAuth("root", "r00t"))
	if err != nil {
		t.Fatalf("Open as root: %v", err)
	}
	if s.ClusterID() == "" {
		t.Error("no cluster id")
	}
	for _, opts := range [][]Option{{WithAuth("root", "wrong")}, nil} {
		_, err := openSecure(t, ctx, ep, opts...)
		if err == nil || errors.Is(err, metadata.ErrUnavailable) {
			t.Errorf("Open with %d options: %v, want a refusal", len(opts), err)
		}
	}
}
