package partition

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/memstore"
	"github.com/strata-broker/strata/tier/record"
)

func newManager(t *testing.T, dir string, cache *metadata.Cache) *Manager {
	t.Helper()
	cfg, err := config.Parse(map[string]string{"log.dirs": dir})
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(config.NewLive(cfg), cache, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// onePartition opens a manager (broker 1) over a cache holding topic "t"
// with one partition in state st, and returns that partition.
func onePartition(t *testing.T, st metadata.PartitionState) *Partition {
	t.Helper()
	cache := metadata.NewCache()
	m := newManager(t, t.TempDir(), cache)
	cache.Load(1, []metadata.Change{
		{Kind: metadata.ChangeTopic, Topic: "t", ID: metadata.NewTopicID()},
		{Kind: metadata.ChangePartition, Topic: "t", Partition: 0, State: st},
	})
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	p, ok := m.Get("t", 0)
	if !ok {
		t.Fatal("partition t-0 not opened")
	}
	return p
}

func topicChanges(name string, id metadata.TopicID, configs map[string]string, parts int32) []metadata.Change {
	chs := []metadata.Change{{Kind: metadata.ChangeTopic, Topic: name, ID: id, Configs: configs}}
	for p := range parts {
		chs = append(chs, metadata.Change{Kind: metadata.ChangePartition, Topic: name, Partition: p,
			State: metadata.PartitionState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}}})
	}
	return chs
}

// TestManagerFollowsMetadata: partitions open, take config changes live,
// and go away with their topic; a recreated topic never sees old data.
func TestManagerFollowsMetadata(t *testing.T) {
	dir := t.TempDir()
	cache := metadata.NewCache()
	m := newManager(t, dir, cache)
	id := metadata.NewTopicID()
	cache.Load(1, topicChanges("orders", id, nil, 2))
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	p, ok := m.Get("orders", 1)
	if !ok {
		t.Fatal("partition 1 not opened")
	}
	if _, err := p.Append([]record.Batch{record.NewBatch(record.BuildOptions{}, record.Record{Value: []byte("v")})}, 1); err != nil {
		t.Fatal(err)
	}
	cache.Apply(2, []metadata.Change{{Kind: metadata.ChangeTopic, Topic: "orders", ID: id, Configs: map[string]string{"cleanup.policy": "compact"}}})
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	if !p.Config().Compact {
		t.Fatal("config change not applied")
	}
	// Delete and recreate under the same name: a fresh, empty log.
	del := []metadata.Change{{Kind: metadata.ChangeTopic, Delete: true, Topic: "orders"},
		{Kind: metadata.ChangePartition, Delete: true, Topic: "orders", Partition: 0},
		{Kind: metadata.ChangePartition, Delete: true, Topic: "orders", Partition: 1}}
	cache.Apply(3, del)
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Get("orders", 1); ok {
		t.Fatal("partition of deleted topic still served")
	}
	// The logs were moved aside at once and are removed in the background.
	m.removing.Wait()
	if left, _ := filepath.Glob(filepath.Join(dir, "orders-*")); len(left) != 0 {
		t.Fatalf("left after deletion: %v", left)
	}
	cache.Apply(4, topicChanges("orders", metadata.NewTopicID(), nil, 2))
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	if p, _ := m.Get("orders", 1); p.Log().LogEndOffset() != 0 {
		t.Fatalf("recreated topic has LEO %d", p.Log().LogEndOffset())
	}
}

// TestRemoveStray: directories of partitions no longer assigned here, and
// those a deletion moved aside but did not finish removing, are removed at
// start-up; others are left alone.
func TestRemoveStray(t *testing.T) {
	dir := t.TempDir()
	cache := metadata.NewCache()
	cache.Load(1, topicChanges("kept", metadata.NewTopicID(), nil, 1))
	stray := filepath.Join(dir, "gone-0")
	foreign := filepath.Join(dir, "notes-1")
	trash := filepath.Join(dir, "old-0.0123abcd-delete") // a deletion cut short
	for _, d := range []string{stray, foreign, trash} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(stray, metaFile), []byte("topic_id: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, dir, cache)
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := m.RemoveStray(); err != nil {
		t.Fatal(err)
	}
	m.removing.Wait()
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("stray dir still there: %v", err)
	}
	if _, err := os.Stat(trash); !os.IsNotExist(err) {
		t.Fatalf("directory of an interrupted deletion still there: %v", err)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Fatalf("directory without partition.metadata was touched: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kept-0", metaFile)); err != nil {
		t.Fatalf("assigned partition missing: %v", err)
	}
}

// TestExpandISRSkipsShuttingDown: a leader takes a caught-up follower into
// the ISR only while it is registered and not in controlled shutdown; the
// change is a compare-and-set on the partition epoch.
func TestExpandISRSkipsShuttingDown(t *testing.T) {
	store := memstore.New()
	t.Cleanup(func() { _ = store.Close() })
	ctx := t.Context()
	regs := map[int32]metadata.Registration{}
	for id := int32(1); id <= 3; id++ {
		reg, err := store.RegisterBroker(ctx, metadata.Broker{ID: id, Host: "127.0.0.1", Port: 9000 + id}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		regs[id] = reg
	}
	if _, err := store.CreateTopic(ctx, metadata.Topic{Name: "t", Partitions: map[int32]metadata.PartitionState{
		0: {Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1}},
	}}); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, t.TempDir(), store.Cache())
	m.SetReplication(store, nil)
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	p, _ := m.Get("t", 0)
	if _, err := regs[2].RequestShutdown(ctx); err != nil {
		t.Fatal(err)
	}
	m.ExpandISR(ctx, p, []int32{1, 2})
	if s, _ := store.Cache().Partition("t", 0); s.PartitionEpoch != 0 {
		t.Fatalf("shutting-down broker 2 taken into the ISR: %+v", s)
	}
	m.ExpandISR(ctx, p, []int32{1, 3}) // the change is free again, and 3 is eligible
	deadline := time.Now().Add(10 * time.Second)
	for {
		changed := store.Cache().Changed()
		if s, _ := store.Cache().Partition("t", 0); slices.Equal(s.ISR, []int32{1, 3}) {
			if s.PartitionEpoch != 1 {
				t.Fatalf("ISR change = %+v, want partition epoch 1", s)
			}
			return
		}
		select {
		case <-changed:
		case <-time.After(time.Until(deadline)):
			t.Fatal("broker 3 not taken into the ISR")
		}
	}
}

// TestManagerFollowsDynamicDefaults: topics without an override take a
// dynamic broker default at the next sync; a topic whose overrides no
// longer resolve against the defaults keeps its open partitions, and its
// data, with their last configuration.
func TestManagerFollowsDynamicDefaults(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	live := config.NewLive(cfg)
	cache := metadata.NewCache()
	m, err := NewManager(live, cache, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	cache.Load(1, append(topicChanges("plain", metadata.NewTopicID(), nil, 1),
		topicChanges("lagged", metadata.NewTopicID(), map[string]string{"min.compaction.lag.ms": "1000"}, 1)...))
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	setDefault := func(rev int64, kv map[string]string) {
		cache.Apply(rev, []metadata.Change{{Kind: metadata.ChangeBrokerConfigs, Entity: metadata.ClusterDefault, Configs: kv}})
		live.Refresh(cache, 1)
	}
	setDefault(2, map[string]string{"log.retention.ms": "5000"})
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	plain, _ := m.Get("plain", 0)
	if plain.Config().RetentionMs != 5000 {
		t.Fatalf("retention.ms %d after the dynamic default", plain.Config().RetentionMs)
	}
	lagged, _ := m.Get("lagged", 0)
	before := *lagged.Config()
	setDefault(3, map[string]string{"log.retention.ms": "6000", "log.cleaner.max.compaction.lag.ms": "500"})
	if err := m.Sync(); err == nil || !strings.Contains(err.Error(), "topic lagged") {
		t.Fatalf("sync with a topic that does not resolve: %v", err)
	}
	if p, ok := m.Get("lagged", 0); !ok || p != lagged || *p.Config() != before {
		t.Fatal("the partition of a topic whose configs stopped resolving was dropped or changed")
	}
	if plain.Config().RetentionMs != 6000 {
		t.Fatal("the other topics did not take the change")
	}
}
