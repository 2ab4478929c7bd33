package partition

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/memstore"
	"github.com/strata-broker/strata/tier/objstore/localdir"
	"github.com/strata-broker/strata/tier/remote"
	"github.com/strata-broker/strata/tier/remote/remotetest"
)

// tieredPartition opens a tiered partition t-0 led by broker 1 whose tier
// metadata is fm, with three records of which the first two are below the
// local log start (so cold).
func tieredPartition(t *testing.T) (*Partition, *remotetest.FaultMeta) {
	t.Helper()
	cfg, err := config.Parse(map[string]string{"log.dirs": t.TempDir(), "remote.log.storage.system.enable": "true"})
	if err != nil {
		t.Fatal(err)
	}
	store, err := localdir.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fm := &remotetest.FaultMeta{RemoteSegments: memstore.New(), Started: make(chan struct{}, 1)}
	rm, err := remote.New(store, fm, func() []remote.PartitionInfo { return nil },
		remote.Options{Interval: time.Hour, CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rm.Close() })
	cache := metadata.NewCache()
	m, err := NewManager(config.NewLive(cfg), cache, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	m.SetTier(rm.Reader())
	cache.Load(1, []metadata.Change{
		{Kind: metadata.ChangeTopic, Topic: "t", ID: metadata.NewTopicID(), Configs: map[string]string{"remote.storage.enable": "true"}},
		{Kind: metadata.ChangePartition, Topic: "t", Partition: 0, State: metadata.PartitionState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}, LeaderEpoch: 1}},
	})
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	p, _ := m.Get("t", 0)
	for range 3 {
		if _, err := p.AppendAsLeader(1, oneBatch(), 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.DeleteRecords(1, 2); err != nil || p.LogStartOffset() != 2 {
		t.Fatalf("delete records: start %d, %v", p.LogStartOffset(), err)
	}
	return p, fm
}

// TestLocate: a hot offset is located without I/O; a cold one whose tier
// metadata cannot be listed is a retriable error that keeps its cause,
// returned at once, and a list that hangs ends with the request's context;
// a cold offset the tier does not hold is out of range.
func TestLocate(t *testing.T) {
	p, fm := tieredPartition(t)
	ctx := context.Background()

	if loc, err := p.Locate(ctx, 2); err != nil || loc.Cold() {
		t.Fatalf("locate a hot offset: %+v, %v", loc, err)
	}
	p.LogStartOffset()
	p.TieredEndOffset()
	if n := fm.Lists.Load(); n != 0 {
		t.Fatalf("%d metadata lists for hot look-ups", n)
	}

	fm.Down.Store(true)
	start := time.Now()
	_, err := p.Locate(ctx, 0)
	if !errors.Is(err, remote.ErrMetadataUnavailable) || !errors.Is(err, remotetest.ErrUnreachable) {
		t.Fatalf("locate a cold offset with the metadata store down: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("locate took %v", took)
	}
	if n := fm.Lists.Load(); n != 1 {
		t.Fatalf("%d metadata lists for one locate", n)
	}

	cctx := fm.HangCanceled(ctx)
	start = time.Now()
	if _, err := p.Locate(cctx, 0); !errors.Is(err, remote.ErrMetadataUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("locate under a cancelled request: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("locate under a cancelled request took %v", took)
	}

	fm.Hang.Store(false)
	fm.Down.Store(false)
	if _, err := p.Locate(ctx, 0); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("locate a cold offset the tier does not hold: %v", err)
	}
}
