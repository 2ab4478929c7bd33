package etcdstore

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/etcdstore/etcdtest"
)

// The package's tests share one embedded etcd; each works under its own
// key prefix (etcdtest.Prefix).
func TestMain(m *testing.M) { etcdtest.Main(m, StartEmbedded) }

var (
	testLogger = etcdtest.Logger
	testCtx    = etcdtest.Context
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

// part builds a partition state led by the first replica, all in sync.
func part(replicas ...int32) metadata.PartitionState {
	return metadata.PartitionState{Replicas: replicas, Leader: replicas[0], ISR: replicas}
}

// topicOf builds a topic with n partitions on replicas.
func topicOf(name string, n int32, replicas ...int32) metadata.Topic {
	t := metadata.Topic{Name: name, Partitions: map[int32]metadata.PartitionState{}}
	for p := range n {
		t.Partitions[p] = part(replicas...)
	}
	return t
}

// waitClosed waits until ch is closed.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	timer := time.NewTimer(20 * time.Second)
	defer timer.Stop()
	select {
	case <-ch:
	case <-timer.C:
		t.Fatalf("timed out waiting for %s", what)
	}
}

// revokeLease ends a lease at once, as its expiry would.
func revokeLease(t *testing.T, s *Store, lease clientv3.LeaseID) {
	t.Helper()
	if _, err := s.cli.Revoke(testCtx(t), lease); err != nil {
		t.Fatalf("revoke lease %x: %v", int64(lease), err)
	}
}
