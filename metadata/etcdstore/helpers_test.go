package etcdstore

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/metadata/etcdstore/etcdtest"
	"github.com/strata-broker/strata/metadata/metadatatest"
)

// The package's tests share one embedded etcd; each works under its own
// key prefix (etcdtest.Prefix).
func TestMain(m *testing.M) { etcdtest.Main(m, StartEmbedded) }

var (
	testLogger = etcdtest.Logger
	testCtx    = etcdtest.Context
	part       = metadatatest.Part
	topicOf    = metadatatest.TopicOf
	waitClosed = metadatatest.WaitClosed
)

// openStore opens a store on the shared server under the test's prefix.
func openStore(t *testing.T) *Store {
	t.Helper()
	return openAt(t, etcdtest.Endpoints(), etcdtest.Prefix(t))
}

func openAt(t *testing.T, endpoints []string, prefix string) *Store {
	t.Helper()
	s, err := Open(testCtx(t), endpoints, prefix, testLogger())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// revokeLease ends a lease at once, as its expiry would.
func revokeLease(t *testing.T, s *Store, lease clientv3.LeaseID) {
	t.Helper()
	if _, err := s.cli.Revoke(testCtx(t), lease); err != nil {
		t.Fatalf("revoke lease %x: %v", int64(lease), err)
	}
}
