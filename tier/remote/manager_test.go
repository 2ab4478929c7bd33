package remote

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/strata-broker/strata/metadata"
)

func sealed(f *fixture) int {
	n := 0
	for _, s := range f.log.Segments() {
		if s.Sealed {
			n++
		}
	}
	return n
}

func TestCopyLocalRetentionAndColdRead(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(120)
	want := sealed(f)
	if want < 5 {
		t.Fatalf("only %d sealed segments", want)
	}
	f.m.RunOnce(context.Background())

	segs := f.records()
	if len(finished(segs)) != want || countKeys(t, f.store, ".log") != want || countKeys(t, f.store, "manifest.json") != 1 {
		t.Fatalf("%d finished records, %d .log objects; want %d", len(finished(segs)), countKeys(t, f.store, ".log"), want)
	}
	for i := 1; i < len(segs); i++ {
		if segs[i].BaseOffset != segs[i-1].EndOffset+1 {
			t.Fatalf("gap or overlap between %+v and %+v", segs[i-1], segs[i])
		}
	}
	// local.retention.bytes=0: every sealed (and copied) segment is gone.
	if sealed(f) != 0 || f.log.LogStartOffset() != segs[len(segs)-1].EndOffset+1 {
		t.Fatalf("local start %d, %d sealed left", f.log.LogStartOffset(), sealed(f))
	}
	if start, ok := f.m.Reader().LogStartOffset(f.id, 0); !ok || start != 0 {
		t.Fatalf("remote start %d %v", start, ok)
	}
	if n := f.readCold(f.m, 0); n == 0 {
		t.Fatal("nothing read cold")
	}
	// A mid-batch offset returns its whole batch.
	s, err := f.m.Reader().Read(context.Background(), f.id, 0, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	bs := readSlice(t, s.ref, s.Pos, s.Len)
	s.Release()
	if len(bs) != 1 || bs[0].BaseOffset() != 3 {
		t.Fatalf("read at 4 gave %d batches from %d", len(bs), bs[0].BaseOffset())
	}
	if mem, disk := f.m.Reader().cache.usedBytes(); mem > 8<<10+1000 || disk > 8<<10+1000 {
		t.Fatalf("chunk cache holds %d bytes in memory, %d on disk", mem, disk)
	}
	if _, err := f.m.Reader().Read(context.Background(), f.id, 0, f.log.LogEndOffset(), 100); !errors.Is(err, ErrNotTiered) {
		t.Fatalf("read past the tier: %v", err)
	}
}

func TestNewLeaderResumesWithoutGapOrDuplicate(t *testing.T) {
	f := newFixture(t, nil)
	f.cfg.LocalRetentionBytes = -1
	f.produce(60)
	f.m.RunOnce(context.Background())
	first := len(finished(f.records()))

	// Failover: a second broker, newer epoch, same bucket and metadata.
	f.epoch.Store(2)
	f.produce(60)
	m2 := f.manager()
	m2.RunOnce(context.Background())
	f.m = m2
	segs := finished(f.records())
	if len(segs) != sealed(f) || len(segs) <= first {
		t.Fatalf("%d finished after failover, %d sealed, %d before", len(segs), sealed(f), first)
	}
	for i := 1; i < len(segs); i++ {
		if segs[i].BaseOffset != segs[i-1].EndOffset+1 {
			t.Fatalf("gap or overlap at %d", segs[i].BaseOffset)
		}
	}
	// The deposed leader's writes are fenced.
	if err := f.meta.PutRemoteSegment(context.Background(), f.id, 0, "x", []byte("{}"), 1); !errors.Is(err, metadata.ErrRemoteFenced) {
		t.Fatalf("epoch-1 write after epoch 2: %v", err)
	}
}

// TestNewLeaderDoesNotRepeatLateCopy: the next leader loaded its view as
// a follower; the deposed leader then finished copies. Leading at a newer
// epoch, it claims the partition before copying and copies nothing twice.
func TestNewLeaderDoesNotRepeatLateCopy(t *testing.T) {
	f := newFixture(t, nil)
	f.cfg.LocalRetentionBytes = -1
	f.produce(60)
	ctx := context.Background()
	m2 := f.manager()
	if _, err := m2.refresh(ctx, f.id, 0, "t"); err != nil { // its follower pass
		t.Fatal(err)
	}
	f.m.RunOnce(ctx) // the old leader copies, unseen by m2
	before := finished(f.records())
	if len(before) == 0 {
		t.Fatal("nothing copied")
	}

	f.epoch.Store(2)
	m2.copyPending(ctx)
	m2.RunOnce(ctx)
	segs := finished(f.records())
	if len(segs) != len(before) {
		t.Fatalf("%d finished copies after failover, %d before", len(segs), len(before))
	}
	// The claim fenced the deposed leader.
	if err := f.meta.PutRemoteSegment(ctx, f.id, 0, "x", []byte("{}"), 1); !errors.Is(err, metadata.ErrRemoteFenced) {
		t.Fatalf("epoch-1 write after the epoch-2 claim: %v", err)
	}
}

// TestPlainReadKeepsClaimOnlyIfLater: a read that began after the claim
// keeps it; one that began before (it may predate the fence) drops it, so
// the next copy claims again.
func TestPlainReadKeepsClaimOnlyIfLater(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	pi := f.source()[0]
	claimed := func() int32 {
		f.m.mu.Lock()
		defer f.m.mu.Unlock()
		return f.m.parts[pkey{f.id, 0}].claimed
	}
	f.m.mu.Lock()
	f.m.seq++
	before := f.m.seq // a read begins
	f.m.mu.Unlock()
	if err := f.m.claim(ctx, pi); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.refresh(ctx, f.id, 0, "t"); err != nil {
		t.Fatal(err)
	}
	if got := claimed(); got != pi.LeaderEpoch+1 {
		t.Fatalf("after a later read: claimed %d, want %d", got, pi.LeaderEpoch+1)
	}
	f.m.load(pkey{f.id, 0}, "t", nil, nil, -1, before) // the earlier read ends
	if got := claimed(); got != 0 {
		t.Fatalf("after an earlier read: claimed %d, want 0", got)
	}
}

func TestOrphansOfInterruptedCopyAreDeleted(t *testing.T) {
	f := newFixture(t, nil)
	f.cfg.LocalRetentionBytes = -1
	f.produce(40)
	ctx := context.Background()
	// An interrupted copy: record COPY_STARTED and one object written.
	orphan := Segment{Topic: "t", TopicID: "010203" + "00000000000000000000000000", CopyID: "dead", BaseOffset: 0, EndOffset: 5, State: CopyStarted}
	if err := f.m.putRecord(ctx, f.id, &orphan, 1); err != nil {
		t.Fatal(err)
	}
	key := dir("t", f.id, 0) + orphan.Name() + ".log"
	if err := f.store.Put(ctx, key, bytes.NewReader([]byte("partial")), 7); err != nil {
		t.Fatal(err)
	}
	// An object no record names, old enough to be an orphan.
	stray := dir("t", f.id, 0) + "00000000000000000000-beef.log"
	if err := f.store.Put(ctx, stray, bytes.NewReader([]byte("x")), 1); err != nil {
		t.Fatal(err)
	}
	f.now.Add(3_600_000)
	f.m.RunOnce(ctx)
	for _, k := range []string{key, stray} {
		if _, err := f.store.Head(ctx, k); err == nil {
			t.Fatalf("orphan %s still there", k)
		}
	}
	for _, s := range f.records() {
		if s.CopyID == "dead" && s.State != DeleteFinished {
			t.Fatalf("orphan record in %s", s.State)
		}
	}
	if len(finished(f.records())) != sealed(f) {
		t.Fatal("copies missing after orphan cleanup")
	}
}

func TestTotalRetentionAdvancesLogStart(t *testing.T) {
	f := newFixture(t, nil)
	f.produce(120)
	f.m.RunOnce(context.Background())
	before := len(finished(f.records()))
	f.cfg.RetentionBytes = 8000
	f.cfg.LocalRetentionBytes = 0
	f.m.RunOnce(context.Background())
	fin := finished(f.records())
	if len(fin) >= before || len(fin) == 0 {
		t.Fatalf("%d finished copies after retention, %d before", len(fin), before)
	}
	start, _ := f.m.Reader().LogStartOffset(f.id, 0)
	if start != fin[0].BaseOffset || start == 0 {
		t.Fatalf("log start %d, first copy %d", start, fin[0].BaseOffset)
	}
	if countKeys(t, f.store, ".log") != len(fin) {
		t.Fatalf("%d .log objects for %d copies", countKeys(t, f.store, ".log"), len(fin))
	}
	if !f.m.MayDeleteLocal(f.id, 0, fin[len(fin)-1].EndOffset+1) || f.m.MayDeleteLocal(f.id, 0, f.log.LogEndOffset()) {
		t.Fatal("MayDeleteLocal disagrees with the copies")
	}
	f.readCold(f.m, start)
}

func TestLocalKeptWithoutFinishedCopy(t *testing.T) {
	f := newFixture(t, nil)
	f.cfg.RemoteLogCopyDisable = true
	f.produce(60)
	n := sealed(f)
	f.m.RunOnce(context.Background())
	if sealed(f) != n || f.log.LogStartOffset() != 0 {
		t.Fatal("local segments deleted without a remote copy")
	}
}

func TestOffsetForTimestampInTier(t *testing.T) {
	f := newFixture(t, nil)
	base := f.now.Load()
	for i := range 40 {
		f.now.Store(base + int64(i)*1000)
		f.produce(1)
	}
	f.m.RunOnce(context.Background())
	if f.log.LogStartOffset() == 0 {
		t.Fatal("nothing tiered")
	}
	for _, i := range []int64{0, 7, 13} {
		off, ts, ok, err := f.m.Reader().OffsetForTimestamp(context.Background(), f.id, 0, base+i*1000)
		if err != nil || !ok || off != i*3 || ts != base+i*1000 {
			t.Fatalf("time %d: offset %d ts %d ok %v err %v; want %d", i, off, ts, ok, err, i*3)
		}
	}
	if _, _, ok, _ := f.m.Reader().OffsetForTimestamp(context.Background(), f.id, 0, base+1e9); ok {
		t.Fatal("found a record newer than every record")
	}
}
