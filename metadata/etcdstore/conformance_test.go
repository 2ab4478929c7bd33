package etcdstore

import (
	"testing"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/etcdstore/etcdtest"
	"github.com/strata-broker/strata/metadata/metadatatest"
)

// TestConformance runs the metadata conformance suite on embedded etcd:
// each subtest's cluster is its own key prefix on the shared server.
func TestConformance(t *testing.T) {
	metadatatest.Run(t, func(t *testing.T) metadatatest.Cluster {
		return etcdCluster{prefix: etcdtest.Prefix(t)}
	})
}

// etcdCluster opens stores under one prefix; its hooks revoke leases,
// which is what their expiry does.
type etcdCluster struct{ prefix string }

func (c etcdCluster) Open(t *testing.T) metadata.Store {
	return openAt(t, etcdtest.Endpoints(), c.prefix)
}

func (etcdCluster) ExpireRegistration(t *testing.T, reg metadata.Registration) {
	r := reg.(*registration)
	revokeLease(t, r.s, r.lease)
}

func (etcdCluster) ExpireSession(t *testing.T, tm metadata.Term) {
	x := tm.(*term)
	revokeLease(t, x.s, x.sess.Lease())
}
