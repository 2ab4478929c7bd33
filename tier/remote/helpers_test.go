package remote

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/memstore"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/objstore"
	"github.com/strata-broker/strata/tier/objstore/localdir"
	"github.com/strata-broker/strata/tier/record"
)

var quiet = slog.New(slog.DiscardHandler)

// fixture is one partition log with a remote manager over a local
// directory store and in-memory metadata.
type fixture struct {
	t     *testing.T
	log   *local.Log
	store objstore.ObjectStore
	meta  *memstore.Store
	cfg   *config.Topic
	id    metadata.TopicID
	epoch atomic.Int32
	now   atomic.Int64 // ms
	m     *Manager
	data  map[int64][]byte // batch base offset → bytes as appended
}

func newFixture(t *testing.T, store objstore.ObjectStore) *fixture {
	t.Helper()
	l, err := local.Open(t.TempDir(), local.Config{SegmentBytes: 4096, IndexIntervalBytes: 256}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if store == nil {
		s, err := localdir.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		store = s
	}
	f := &fixture{t: t, log: l, store: store, meta: memstore.New(), id: metadata.TopicID{1, 2, 3}, data: map[int64][]byte{}}
	t.Cleanup(func() { f.meta.Close() })
	f.cfg = &config.Topic{RemoteStorageEnable: true, RetentionMs: -1, RetentionBytes: -1, LocalRetentionMs: -2, LocalRetentionBytes: 0}
	f.epoch.Store(1)
	f.now.Store(time.Now().UnixMilli()) // object mod times use the real clock
	f.m = f.manager()
	return f
}

// manager builds a manager (a broker) over the fixture's partition.
func (f *fixture) manager() *Manager {
	f.t.Helper()
	m, err := New(f.store, f.meta, f.source, Options{
		Interval: time.Hour, CacheDir: f.t.TempDir(), CacheBytes: 8 << 10, ChunkSize: 1000,
		OrphanGrace: time.Minute, Now: func() time.Time { return time.UnixMilli(f.now.Load()) }, Logger: quiet,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { m.Close() })
	return m
}

func (f *fixture) source() []PartitionInfo {
	return []PartitionInfo{{
		Topic: "t", Partition: 0, TopicID: f.id, Log: f.log, Leader: true,
		LeaderEpoch: f.epoch.Load(), HighWatermark: f.log.LogEndOffset(), Config: f.cfg,
	}}
}

// produce appends n batches of 3 records each.
func (f *fixture) produce(n int) {
	f.t.Helper()
	for i := range n {
		var recs []record.Record
		for j := range 3 {
			recs = append(recs, record.Record{OffsetDelta: int32(j), Key: fmt.Appendf(nil, "k%d", i), Value: bytes.Repeat([]byte{byte(i)}, 90+i%50)})
		}
		b := record.NewBatch(record.BuildOptions{FirstTimestamp: f.now.Load()}, recs...)
		res, err := f.log.AppendAsLeader([]record.Batch{b}, local.AppendOptions{LeaderEpoch: f.epoch.Load(), Now: f.now.Load()})
		if err != nil {
			f.t.Fatal(err)
		}
		f.data[res.FirstOffset] = nil
	}
	// Record the bytes as stored (offsets and epoch assigned).
	for off := int64(0); off < f.log.LogEndOffset(); {
		s, err := f.log.Read(off, 1<<20, f.log.LogEndOffset())
		if err != nil {
			break // below the local start: recorded earlier
		}
		batches := readSlice(f.t, s.File, s.Pos, s.Len)
		s.Release()
		for _, b := range batches {
			f.data[b.BaseOffset()] = bytes.Clone(b)
			off = b.LastOffset() + 1
		}
	}
}

func readSlice(t *testing.T, r io.ReaderAt, pos, n int64) []record.Batch {
	t.Helper()
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, pos); err != nil {
		t.Fatal(err)
	}
	bs, err := record.Split(buf)
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// readCold reads every offset below the local log start from the tier and
// compares it with what was appended; it returns the batches read.
func (f *fixture) readCold(m *Manager, from int64) int {
	f.t.Helper()
	n := 0
	for off := from; off < f.log.LogStartOffset(); {
		s, err := m.Reader().Read(context.Background(), f.id, 0, off, 700)
		if err != nil {
			f.t.Fatalf("cold read at %d: %v", off, err)
		}
		bs := readSlice(f.t, s.ref, s.Pos, s.Len)
		s.Release()
		for _, b := range bs {
			if want := f.data[b.BaseOffset()]; !bytes.Equal(b, want) {
				f.t.Fatalf("cold batch at %d differs from what was appended", b.BaseOffset())
			}
			off = b.LastOffset() + 1
			n++
		}
	}
	return n
}

func (f *fixture) records() []Segment {
	f.t.Helper()
	segs, err := f.m.refresh(context.Background(), f.id, 0, "t")
	if err != nil {
		f.t.Fatal(err)
	}
	return segs
}

func countKeys(t *testing.T, s objstore.ObjectStore, suffix string) int {
	t.Helper()
	n := 0
	for o, err := range s.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Key) >= len(suffix) && o.Key[len(o.Key)-len(suffix):] == suffix {
			n++
		}
	}
	return n
}
