package config

import (
	"errors"
	"fmt"
	"strings"
)

// EtcdClient is how the broker authenticates to an external etcd
// (metadata.etcd.endpoints): TLS with an optional client certificate
// (etcd's --client-cert-auth) and etcd's own user authentication. The
// embedded etcd listens on loopback only and takes none of them.
type EtcdClient struct {
	CAFile   string // metadata.etcd.tls.ca.file: PEM CAs that verify etcd's certificate (empty: the system roots)
	CertFile string // metadata.etcd.tls.cert.file: PEM client certificate chain
	KeyFile  string // metadata.etcd.tls.key.file: PEM private key of CertFile
	Username string // metadata.etcd.username
	Password string // metadata.etcd.password (sensitive)
}

// TLS reports whether a metadata.etcd.tls.* key is set: the client then
// speaks TLS to every endpoint.
func (e EtcdClient) TLS() bool { return e.CAFile != "" || e.CertFile != "" || e.KeyFile != "" }

// checkEtcdClient enforces that the etcd client keys go together and
// apply to an external etcd.
func (b *Broker) checkEtcdClient() error {
	e := b.EtcdClient
	switch {
	case (e.CertFile == "") != (e.KeyFile == ""):
		return invalid("metadata.etcd.tls.cert.file", errors.New("metadata.etcd.tls.cert.file and metadata.etcd.tls.key.file must be set together"))
	case e.Password != "" && e.Username == "":
		return invalid("metadata.etcd.password", errors.New("requires metadata.etcd.username"))
	case (e.TLS() || e.Username != "") && len(b.EtcdEndpoints) == 0:
		return invalid("metadata.etcd.endpoints", errors.New("must name the external etcd when metadata.etcd.tls.* or metadata.etcd.username is set (the embedded etcd takes neither)"))
	}
	if e.TLS() {
		for _, ep := range b.EtcdEndpoints {
			if strings.HasPrefix(ep, "http://") {
				return invalid("metadata.etcd.endpoints", fmt.Errorf("%s is plaintext while metadata.etcd.tls.* is set: use https:// or host:port", ep))
			}
		}
	}
	return nil
}
