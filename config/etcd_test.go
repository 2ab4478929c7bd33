package config

import (
	"strings"
	"testing"
)

// TestEtcdClient: the metadata.etcd.tls.* and credential keys reach
// EtcdClient, and the password is secret.
func TestEtcdClient(t *testing.T) {
	caFile, certFile, keyFile := "/etc/etcd/ca.pem", "/etc/strata/etcd.pem", "/etc/strata/etcd-key.pem"
	b, err := Parse(map[string]string{
		"metadata.etcd.endpoints":     "127.0.0.1:2379,https://127.0.0.1:2380",
		"metadata.etcd.tls.ca.file":   caFile,
		"metadata.etcd.tls.cert.file": certFile,
		"metadata.etcd.tls.key.file":  keyFile,
		"metadata.etcd.username":      "strata",
		"metadata.etcd.password":      "s3cret",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := EtcdClient{CAFile: caFile, CertFile: certFile, KeyFile: keyFile, Username: "strata", Password: "s3cret"}
	if b.EtcdClient != want {
		t.Errorf("EtcdClient %+v, want %+v", b.EtcdClient, want)
	}
	if !IsSensitive("metadata.etcd.password") || IsSensitive("metadata.etcd.username") || IsSensitive("metadata.etcd.tls.key.file") {
		t.Error("only metadata.etcd.password is secret")
	}
}

func TestEtcdClientErrors(t *testing.T) {
	ext := "127.0.0.1:2379"
	for _, tc := range []struct {
		kv   map[string]string
		want string
	}{
		{map[string]string{"metadata.etcd.endpoints": ext, "metadata.etcd.tls.cert.file": "c.pem"}, "must be set together"},
		{map[string]string{"metadata.etcd.endpoints": ext, "metadata.etcd.tls.key.file": "k.pem"}, "must be set together"},
		{map[string]string{"metadata.etcd.endpoints": ext, "metadata.etcd.password": "pw"}, "requires metadata.etcd.username"},
		{map[string]string{"metadata.etcd.username": "u"}, "must name the external etcd"},
		{map[string]string{"metadata.etcd.tls.ca.file": "ca.pem"}, "must name the external etcd"},
		{map[string]string{"metadata.etcd.endpoints": "http://127.0.0.1:2379", "metadata.etcd.tls.ca.file": "ca.pem"}, "is plaintext"},
	} {
		if _, err := Parse(tc.kv); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.kv, err, tc.want)
		}
	}
}
