package etcdstore

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Option adjusts how Open connects to etcd.
type Option func(*clientv3.Config) error

// WithTLSFiles makes the client speak TLS to every endpoint given as
// host:port or https://: caFile (PEM) verifies etcd's certificate (empty:
// the system roots), and certFile with keyFile (PEM, both or neither) is
// the client certificate etcd's --client-cert-auth asks for. The files
// are read once, by Open.
func WithTLSFiles(caFile, certFile, keyFile string) Option {
	return func(c *clientv3.Config) error {
		t := &tls.Config{MinVersion: tls.VersionTLS12}
		if caFile != "" {
			pem, err := os.ReadFile(caFile)
			if err != nil {
				return fmt.Errorf("etcdstore: TLS CA: %w", err)
			}
			t.RootCAs = x509.NewCertPool()
			if !t.RootCAs.AppendCertsFromPEM(pem) {
				return fmt.Errorf("etcdstore: TLS CA: no PEM certificate in %s", caFile)
			}
		}
		if certFile != "" || keyFile != "" {
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return fmt.Errorf("etcdstore: TLS client certificate: %w", err)
			}
			t.Certificates = []tls.Certificate{pair}
		}
		c.TLS = t
		return nil
	}
}

// WithAuth logs the client in as user (etcd's authentication, enabled
// with `etcdctl auth enable`); the user needs read and write access to the
// store's prefix.
func WithAuth(user, password string) Option {
	return func(c *clientv3.Config) error {
		c.Username, c.Password = user, password
		return nil
	}
}
