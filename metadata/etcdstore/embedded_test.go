package etcdstore

import (
	"testing"
	"time"
)

// TestEmbeddedRestartKeepsData: topics, cluster id and the producer-id
// counter survive a restart on the same directory, and start-up is quick.
func TestEmbeddedRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	e, err := StartEmbedded(dir, testLogger())
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Logf("embedded etcd ready in %v at %v", time.Since(start), e.Endpoints())
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("start took %v", took)
	}
	s, err := Open(testCtx(t), e.Endpoints(), "", testLogger())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := s.CreateTopic(testCtx(t), topicOf("kept", 3, 1)); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	before, _ := s.Cache().Topic("kept")
	first, err := s.AllocateProducerIDs(testCtx(t), 100)
	if err != nil {
		t.Fatalf("AllocateProducerIDs: %v", err)
	}
	clusterID := s.ClusterID()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	e.Close()

	start = time.Now()
	e, err = StartEmbedded(dir, testLogger())
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	defer e.Close()
	t.Logf("restarted in %v", time.Since(start))
	s = openAt(t, e.Endpoints(), "")
	if s.ClusterID() != clusterID {
		t.Errorf("cluster id %q after restart, was %q", s.ClusterID(), clusterID)
	}
	after, ok := s.Cache().Topic("kept")
	if !ok || after.ID != before.ID || len(after.Partitions) != 3 {
		t.Fatalf("after restart topic = %+v, %v; want id %v with 3 partitions", after, ok, before.ID)
	}
	next, err := s.AllocateProducerIDs(testCtx(t), 100)
	if err != nil {
		t.Fatalf("AllocateProducerIDs: %v", err)
	}
	if next < first+100 {
		t.Errorf("block after restart starts at %d, overlapping [%d,%d)", next, first, first+100)
	}
}
