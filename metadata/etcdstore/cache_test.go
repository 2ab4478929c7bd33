package etcdstore

import (
	"context"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/etcdstore/etcdtest"
)

// TestPrefixesAreIsolated: stores with different prefixes share nothing.
func TestPrefixesAreIsolated(t *testing.T) {
	a := openAt(t, etcdtest.Endpoints(), etcdtest.Prefix(t)+"/a")
	b := openAt(t, etcdtest.Endpoints(), etcdtest.Prefix(t)+"/a2") // a sibling, not a child
	ctx := testCtx(t)
	rev, err := a.CreateTopic(ctx, topicOf("only-a", 1, 1))
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if _, err := b.CreateTopic(ctx, topicOf("only-b", 1, 1)); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if err := b.Cache().WaitRevision(ctx, rev); err != nil {
		t.Fatalf("WaitRevision: %v", err)
	}
	if a.ClusterID() == b.ClusterID() {
		t.Error("separate prefixes got one cluster id")
	}
	if ts := a.Cache().Topics(); len(ts) != 1 || ts[0].Name != "only-a" {
		t.Errorf("a sees %v", ts)
	}
	if ts := b.Cache().Topics(); len(ts) != 1 || ts[0].Name != "only-b" {
		t.Errorf("b sees %v", ts)
	}
}

// TestWatchRelistsAfterCompaction starts a watch loop from a revision
// that has been compacted away: it must re-list and then keep following.
func TestWatchRelistsAfterCompaction(t *testing.T) {
	s := openStore(t)
	ctx := testCtx(t)
	if _, err := s.CreateTopic(ctx, topicOf("before", 1, 1)); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	rev, err := s.CreateTopic(ctx, topicOf("before2", 1, 1))
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if _, err := s.cli.Compact(ctx, rev); err != nil {
		t.Fatalf("Compact: %v", err)
	}

	// A second feeder for a fresh cache, starting far behind.
	lagging := &Store{cli: s.cli, keys: s.keys, log: s.log, cache: metadata.NewCache(), outage: &outage{log: s.log}, watchDone: make(chan struct{})}
	wctx, stop := context.WithCancel(context.Background())
	go lagging.watchLoop(wctx, 1)
	defer func() {
		stop()
		<-lagging.watchDone
	}()
	if err := lagging.cache.WaitRevision(ctx, rev); err != nil {
		t.Fatalf("lagging cache never caught up: %v", err)
	}
	if n := len(lagging.cache.Topics()); n != 2 {
		t.Fatalf("lagging cache has %d topics, want 2", n)
	}
	rev, err = s.CreateTopic(ctx, topicOf("after", 1, 1))
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if err := lagging.cache.WaitRevision(ctx, rev); err != nil {
		t.Fatalf("lagging cache stopped following: %v", err)
	}
	if _, ok := lagging.cache.Topic("after"); !ok {
		t.Fatal("topic created after the re-list is missing")
	}
}

// TestCacheIgnoresForeignAndBadKeys: junk under the prefix is skipped.
func TestCacheIgnoresForeignAndBadKeys(t *testing.T) {
	s := openStore(t)
	ctx := testCtx(t)
	for k, v := range map[string]string{
		s.keys.topic("bad"):           "{not json",
		s.keys.root + "unknown/key":   "x",
		s.keys.root + "brokers/ids/x": "{}",
	} {
		if _, err := s.cli.Put(ctx, k, v); err != nil {
			t.Fatalf("Put: %v", err)
		}
	}
	rev, err := s.CreateTopic(ctx, topicOf("good", 1, 1))
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	if err := s.Cache().WaitRevision(ctx, rev); err != nil {
		t.Fatalf("WaitRevision: %v", err)
	}
	if ts := s.Cache().Topics(); len(ts) != 1 || ts[0].Name != "good" {
		t.Fatalf("topics = %v", ts)
	}
	// A fresh listing skips the same keys.
	if _, err := s.load(ctx); err != nil {
		t.Fatalf("load: %v", err)
	}
	if ts := s.Cache().Topics(); len(ts) != 1 {
		t.Fatalf("topics after re-list = %v", ts)
	}
}

// TestOpenUnreachableFails: Open gives up when its ctx ends.
func TestOpenUnreachableFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s, err := Open(ctx, []string{"http://127.0.0.1:1"}, "", testLogger()); err == nil {
		s.Close()
		t.Fatal("Open of an unreachable etcd succeeded")
	}
}
