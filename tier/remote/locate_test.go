package remote

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/remote/remotetest"
)

// readerOver is a second broker's reader of the fixture's tier, over meta.
func (f *fixture) readerOver(meta metadata.RemoteSegments) *Reader {
	f.t.Helper()
	m, err := New(f.store, meta, func() []PartitionInfo { return nil }, Options{
		Interval: time.Hour, CacheDir: f.t.TempDir(), CacheBytes: 8 << 10, ChunkSize: 1000,
		Now: func() time.Time { return time.UnixMilli(f.now.Load()) }, Logger: quiet,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { m.Close() })
	return m.Reader()
}

// TestLocateListsOnlyOnRefresh: look-ups on a loaded view (Locate,
// LogStartOffset, HighestOffset, MayDeleteLocal) list nothing; Refresh
// lists once; a view older than the task interval still answers the
// copies it holds without I/O, and is listed once by the Locate of an
// offset it does not hold.
func TestLocateListsOnlyOnRefresh(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(60)
	f.m.RunOnce(context.Background())
	fm := &remotetest.FaultMeta{RemoteSegments: f.meta}
	r := f.readerOver(fm)
	ctx := context.Background()

	if _, ok := r.LogStartOffset(f.id, 0); ok {
		t.Fatal("a view never loaded has a log start")
	}
	if err := r.Refresh(ctx, f.id, 0); err != nil {
		t.Fatal(err)
	}
	if n := fm.Lists.Load(); n != 1 {
		t.Fatalf("%d lists for one refresh", n)
	}
	end, ok := r.HighestOffset(f.id, 0)
	if !ok || end < 1 {
		t.Fatalf("highest tiered offset %d %v", end, ok)
	}
	for off := int64(0); off <= end; off++ {
		if _, err := r.Locate(ctx, f.id, 0, off); err != nil {
			t.Fatalf("locate %d: %v", off, err)
		}
	}
	if _, err := r.Locate(ctx, f.id, 0, end+1); !errors.Is(err, ErrNotTiered) {
		t.Fatalf("locate past the tier: %v", err)
	}
	r.LogStartOffset(f.id, 0)
	r.m.MayDeleteLocal(f.id, 0, end)
	if n := fm.Lists.Load(); n != 1 {
		t.Fatalf("%d lists after look-ups on a fresh view, want 1 (the refresh)", n)
	}

	f.now.Add(time.Hour.Milliseconds() + 1)
	if _, err := r.Locate(ctx, f.id, 0, 0); err != nil {
		t.Fatal(err)
	}
	if n := fm.Lists.Load(); n != 1 {
		t.Fatalf("%d lists after locating a held copy in a stale view, want 1", n)
	}
	for range 2 {
		if _, err := r.Locate(ctx, f.id, 0, end+1); !errors.Is(err, ErrNotTiered) {
			t.Fatalf("locate past the tier in a stale view: %v", err)
		}
	}
	if n := fm.Lists.Load(); n != 2 {
		t.Fatalf("%d lists, want 2: one reload of the stale view", n)
	}
}

// TestLocateMetadataUnreachable: with the metadata store down, Locate
// answers at once with a retriable error that keeps the cause (not "not
// tiered", which would be OFFSET_OUT_OF_RANGE); a stale view still
// serves the offsets it holds; and a list that hangs ends with the
// caller's context, not after the reader's own timeout.
func TestLocateMetadataUnreachable(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(60)
	f.m.RunOnce(context.Background())
	fm := &remotetest.FaultMeta{RemoteSegments: f.meta, Started: make(chan struct{}, 1)}
	r := f.readerOver(fm)
	ctx := context.Background()

	fm.Down.Store(true)
	start := time.Now()
	_, err := r.Locate(ctx, f.id, 0, 0)
	if !errors.Is(err, ErrMetadataUnavailable) || !errors.Is(err, remotetest.ErrUnreachable) || errors.Is(err, ErrNotTiered) {
		t.Fatalf("locate with the metadata store down: %v", err)
	}
	if took := time.Since(start); took > refreshTimeout/2 {
		t.Fatalf("locate took %v", took)
	}
	if _, err := r.Read(ctx, f.id, 0, 0, 100); !errors.Is(err, ErrMetadataUnavailable) {
		t.Fatalf("read with the metadata store down: %v", err)
	}

	// Loaded once, then stale while the store is down: offsets the view
	// holds are served, others are still retriable.
	fm.Down.Store(false)
	if err := r.Refresh(ctx, f.id, 0); err != nil {
		t.Fatal(err)
	}
	end, _ := r.HighestOffset(f.id, 0)
	fm.Down.Store(true)
	f.now.Add(time.Hour.Milliseconds() + 1)
	if seg, err := r.Locate(ctx, f.id, 0, 0); err != nil || seg.BaseOffset != 0 {
		t.Fatalf("locate in a stale view with the store down: %+v, %v", seg, err)
	}
	if _, err := r.Locate(ctx, f.id, 0, end+1); !errors.Is(err, ErrMetadataUnavailable) {
		t.Fatalf("locate past a stale view with the store down: %v", err)
	}

	// A hanging list ends when the caller's context does.
	cctx := fm.HangCanceled(ctx)
	start = time.Now()
	_, err = r.Locate(cctx, f.id, 0, end+1)
	if !errors.Is(err, ErrMetadataUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("locate under a cancelled request: %v", err)
	}
	if took := time.Since(start); took > refreshTimeout/2 {
		t.Fatalf("locate under a cancelled request took %v", took)
	}
}

// TestEpochForOffset: the epoch of a tiered offset comes from the epochs
// of the copy holding it, as the local history had it, without I/O; an
// offset no copy holds has none.
func TestEpochForOffset(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(30)
	f.epoch.Store(3)
	f.produce(30)
	history := f.log.Epochs()
	f.m.RunOnce(context.Background())
	fm := &remotetest.FaultMeta{RemoteSegments: f.meta}
	r := f.readerOver(fm)
	if err := r.Refresh(context.Background(), f.id, 0); err != nil {
		t.Fatal(err)
	}
	end, ok := r.HighestOffset(f.id, 0)
	if !ok || end < history[len(history)-1].StartOffset {
		t.Fatalf("tiered up to %d (%v); want past epoch 3's start, history %v", end, ok, history)
	}
	for off := int64(0); off <= end; off++ {
		want := history[0].Epoch
		for _, e := range history {
			if e.StartOffset <= off {
				want = e.Epoch
			}
		}
		if got, ok := r.EpochForOffset(f.id, 0, off); !ok || got != want {
			t.Fatalf("epoch of tiered offset %d: %d, %v; want %d", off, got, ok, want)
		}
	}
	if _, ok := r.EpochForOffset(f.id, 0, end+1); ok {
		t.Fatal("an offset past the tier has an epoch")
	}
	if n := fm.Lists.Load(); n != 1 {
		t.Fatalf("%d lists, want 1 (the refresh)", n)
	}
}
