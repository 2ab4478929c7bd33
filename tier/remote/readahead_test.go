package remote

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-broker/strata/tier/objstore"
	"github.com/strata-broker/strata/tier/objstore/localdir"
)

// countingStore counts the ranged GETs of .log objects.
type countingStore struct {
	objstore.ObjectStore
	logGets atomic.Int64
}

func (s *countingStore) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if strings.HasSuffix(key, ".log") {
		s.logGets.Add(1)
	}
	return s.ObjectStore.GetRange(ctx, key, off, n)
}

// TestReadAheadStreamsRunsOfChunks: a sequential cold read gets the
// chunks ahead of it in runs, one ranged GET per run (about half a
// window: here 2 chunks, less at segment ends), not one per chunk,
// and reads every batch as appended.
func TestReadAheadStreamsRunsOfChunks(t *testing.T) {
	base, err := localdir.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := &countingStore{ObjectStore: base}
	f := newFixture(t, store)
	f.produce(150)
	f.m.RunOnce(context.Background())
	// A reader whose memory tier allows a window of four 1000-byte chunks.
	m, err := New(store, f.meta, f.source, Options{
		Interval: time.Hour, CacheDir: t.TempDir(), CacheBytes: 64 << 10, MemoryBytes: 64 << 10, ChunkSize: 1000,
		OrphanGrace: time.Minute, Now: func() time.Time { return time.UnixMilli(f.now.Load()) }, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if w := m.Reader().readAheadWindow(); w != 4 {
		t.Fatalf("read-ahead window %d, want 4", w)
	}
	store.logGets.Store(0)
	if n := f.readCold(m, 0); n == 0 {
		t.Fatal("nothing read cold")
	}
	m.Reader().bg.Wait() // read-ahead still under way
	chunks := int64(0)
	for _, s := range finished(f.records()) {
		chunks += (s.Size + 999) / 1000
	}
	if gets := store.logGets.Load(); gets*5 > chunks*3 {
		t.Fatalf("%d ranged GETs for %d chunks, want at most 60%% as many (one per chunk without runs)", gets, chunks)
	}
}
