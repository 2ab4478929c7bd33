package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/internal/testcerts"
	"github.com/strata-broker/strata/test/harness"
)

// TestExternalEtcdTLSAndAuth: a broker keeps its metadata in an etcd
// process that requires a client certificate and has authentication
// enabled, given metadata.etcd.tls.* and metadata.etcd.username/password;
// DescribeConfigs hides the password.
func TestExternalEtcdTLSAndAuth(t *testing.T) {
	f := newTLSFixture(t)
	pair := f.issue(t, testcerts.Options{Subject: pkix.Name{CommonName: "strata"}})
	clientCert, clientKey := f.write(t, "etcd-client-cert.pem", pair.CertPEM), f.write(t, "etcd-client-key.pem", pair.KeyPEM)
	server := f.issue(t, testcerts.Options{Subject: pkix.Name{CommonName: "etcd"}, Hosts: []string{"127.0.0.1"}})
	serverCert, serverKey := f.write(t, "etcd-server.pem", server.CertPEM), f.write(t, "etcd-server-key.pem", server.KeyPEM)

	dir := t.TempDir()
	clientURL := "https://127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
	peerURL := "http://127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
	etcd, err := harness.StartChild(filepath.Join(dir, "etcd.log"), "/usr/bin/etcd",
		"--name", "n1", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL, "--initial-cluster", "n1="+peerURL,
		"--cert-file", serverCert, "--key-file", serverKey, "--trusted-ca-file", f.caFile, "--client-cert-auth")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Stop(os.Interrupt, 10*time.Second) })

	ctx := testCtx(t)
	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{clientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{RootCAs: f.ca.Pool(), Certificates: []tls.Certificate{pair.TLS()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := admin.Status(sctx, clientURL)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-etcd.Exited():
			t.Fatalf("etcd exited: %v", etcd.Err())
		case <-ctx.Done():
			t.Fatalf("etcd not up: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if _, err := admin.UserAdd(ctx, "root", "etcd-root-pw"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}

	b := harness.Start(t, map[string]string{
		"metadata.etcd.endpoints":     clientURL,
		"metadata.etcd.tls.ca.file":   f.caFile,
		"metadata.etcd.tls.cert.file": clientCert,
		"metadata.etcd.tls.key.file":  clientKey,
		"metadata.etcd.username":      "root",
		"metadata.etcd.password":      "etcd-root-pw",
	})
	rcs, err := b.Admin().DescribeBrokerConfigs(ctx, 1) // node.id defaults to 1
	if err != nil || len(rcs) != 1 {
		t.Fatalf("describe broker configs: %v, %d resources", err, len(rcs))
	}
	hidden := false
	for _, c := range rcs[0].Configs {
		if c.Key == "metadata.etcd.password" {
			hidden = c.Sensitive && c.Value == nil
		}
	}
	if !hidden {
		t.Error("DescribeConfigs does not hide metadata.etcd.password")
	}
	const topic = "over-secure-etcd"
	harness.CreateTopic(t, b.Admin(), topic, 1, nil)
	produceSync(t, b.Client(kgo.DefaultProduceTopic(topic)), &kgo.Record{Value: []byte("v")})
	if n := countRecords(harness.ReadAll(t, b.Addr(), topic)); n != 1 {
		t.Fatalf("read %d records, want 1", n)
	}
}
