package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/test/tmpfs"
)

// startGuarded starts an embedded etcd as c says with its space guard
// running; both stop at the end of the test.
func startGuarded(t *testing.T, c EmbeddedConfig) *Embedded {
	t.Helper()
	c.Log = testLogger()
	e, err := StartEmbeddedWith(c)
	if err != nil {
		t.Fatalf("StartEmbeddedWith: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { e.Guard(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		e.Close()
	})
	return e
}

// bulkyTopic is a one-partition topic carrying size bytes of config.
func bulkyTopic(i, size int) metadata.Topic {
	t := topicOf(fmt.Sprintf("bulky-%d", i), 1, 1)
	t.Configs = map[string]string{"x": strings.Repeat("v", size)}
	return t
}

// TestQuotaFullRefusesWritesAndRecovers: past the backend quota, writes
// fail with metadata.ErrNoSpace instead of anything worse, reads work, a
// store still opens, deletions work, and once they freed the space the
// guard compacts, defragments and lifts the alarm: writes work again.
func TestQuotaFullRefusesWritesAndRecovers(t *testing.T) {
	e := startGuarded(t, EmbeddedConfig{Dir: t.TempDir(), QuotaBackendBytes: 8 << 20, CheckInterval: 20 * time.Millisecond})
	s := openAt(t, e.Endpoints(), "")
	var created []string
	var err error
	for i := range 200 {
		tp := bulkyTopic(i, 256<<10)
		if _, err = s.CreateTopic(testCtx(t), tp); err != nil {
			break
		}
		created = append(created, tp.Name)
	}
	if !errors.Is(err, metadata.ErrNoSpace) {
		t.Fatalf("write past the quota: %v, want metadata.ErrNoSpace", err)
	}
	t.Logf("quota reached after %d topics: %v", len(created), err)
	waitFor(t, "the NOSPACE alarm in the stats", func() bool { return e.SpaceStats().NoSpace })

	// etcd applies the write that passes the quota and answers it with
	// the NOSPACE error as it raises the alarm: that topic may exist.
	failed := bulkyTopic(len(created), 0).Name
	if got := len(openAt(t, e.Endpoints(), "").Cache().Topics()); got != len(created) && got != len(created)+1 {
		t.Fatalf("a store opened on the full etcd sees %d topics, want %d (or one more)", got, len(created))
	}
	if _, err := s.AllocateProducerIDs(testCtx(t), 1); !errors.Is(err, metadata.ErrNoSpace) {
		t.Fatalf("another write on the full store: %v, want metadata.ErrNoSpace", err)
	}
	for _, name := range append(created, failed) {
		if _, err := s.DeleteTopic(testCtx(t), name); err != nil && !(name == failed && errors.Is(err, metadata.ErrUnknownTopic)) {
			t.Fatalf("delete %s on the full store: %v", name, err)
		}
	}
	waitFor(t, "the alarm to be lifted", func() bool { return !e.SpaceStats().NoSpace })
	if st := e.SpaceStats(); st.BackendBytes >= st.QuotaBytes/10*9 {
		t.Fatalf("alarm lifted with a database of %d bytes, quota %d", st.BackendBytes, st.QuotaBytes)
	}
	if _, err := s.CreateTopic(testCtx(t), bulkyTopic(-1, 1<<10)); err != nil {
		t.Fatalf("write after recovery: %v", err)
	}
}

// TestDiskReserve fills the real (tmpfs) disk of the embedded etcd below
// its reserve: metadata writes fail with metadata.ErrNoSpace, etcd keeps
// running, AllowWrite refuses the broker's writes, deletions work; once
// space is freed the alarm is lifted and writes work again.
func TestDiskReserve(t *testing.T) {
	// etcd preallocates two WAL segments of 64 MB.
	mnt := tmpfs.Mount(t, 200<<20)
	const reserve = 16 << 20
	e := startGuarded(t, EmbeddedConfig{Dir: filepath.Join(mnt, "etcd"), ReserveBytes: reserve, CheckInterval: 20 * time.Millisecond})
	s := openAt(t, e.Endpoints(), "")
	if _, err := s.CreateTopic(testCtx(t), topicOf("early", 1, 1)); err != nil {
		t.Fatalf("create with space: %v", err)
	}
	st := e.SpaceStats()
	if st.DiskAvailableBytes < 2*reserve || st.DiskLow || st.NoSpace {
		t.Fatalf("stats before filling: %+v", st)
	}
	if err := e.AllowWrite(1 << 20); err != nil {
		t.Fatalf("AllowWrite with space: %v", err)
	}

	filler := filepath.Join(mnt, "filler")
	tmpfs.Fill(t, filler, st.DiskAvailableBytes-reserve/2)
	waitFor(t, "the guard to raise the alarm", func() bool { st := e.SpaceStats(); return st.DiskLow && st.NoSpace })
	if _, err := s.CreateTopic(testCtx(t), topicOf("late", 1, 1)); !errors.Is(err, metadata.ErrNoSpace) {
		t.Fatalf("create below the reserve: %v, want metadata.ErrNoSpace", err)
	}
	if err := e.AllowWrite(1); err == nil || !strings.Contains(err.Error(), "metadata.etcd.reserve.bytes") {
		t.Fatalf("AllowWrite below the reserve: %v", err)
	}
	if _, err := s.DeleteTopic(testCtx(t), "early"); err != nil {
		t.Fatalf("delete below the reserve: %v", err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the alarm to be lifted", func() bool { st := e.SpaceStats(); return !st.DiskLow && !st.NoSpace })
	if _, err := s.CreateTopic(testCtx(t), topicOf("late", 1, 1)); err != nil {
		t.Fatalf("create after freeing space: %v", err)
	}
	if err := e.AllowWrite(1 << 20); err != nil {
		t.Fatalf("AllowWrite after freeing space: %v", err)
	}
}

// TestAllowWriteChargesTheBudget: writes are charged against the free
// space above the reserve measured last, so they cannot eat into the
// reserve between two measurements; a refused write costs nothing.
func TestAllowWriteChargesTheBudget(t *testing.T) {
	g := &spaceGuard{dir: "/d", reserve: 10}
	g.stats.Store(&SpaceStats{DiskAvailableBytes: 110, ReserveBytes: 10})
	g.budget.Store(100)
	for _, c := range []struct {
		n  int64
		ok bool
	}{{60, true}, {60, false}, {40, true}, {1, false}} {
		if err := g.allow(c.n); (err == nil) != c.ok {
			t.Fatalf("allow(%d) = %v, want ok %v", c.n, err, c.ok)
		}
	}
	if err := (&spaceGuard{}).allow(1 << 40); err != nil {
		t.Fatalf("allow without a reserve: %v", err)
	}
}

// TestWriteLimits: a txn of more ops than etcd takes, or more bytes than
// one request holds, fails with metadata.ErrTooLarge naming the limit;
// MaxPartitionsPerWrite partitions of the longest topic name fit.
func TestWriteLimits(t *testing.T) {
	s := openStore(t)
	long := strings.Repeat("x", metadata.MaxTopicNameLen)
	// The largest write etcd takes may outlast etcd's own request timeout
	// on a loaded machine (ErrUnavailable, applied or not): retry, and a
	// retry after an applied attempt finds the topic there.
	for attempt := 1; ; attempt++ {
		_, err := s.CreateTopic(testCtx(t), topicOf(long, metadata.MaxPartitionsPerWrite, 1, 2, 3))
		if err == nil || (attempt > 1 && errors.Is(err, metadata.ErrTopicExists)) {
			break
		}
		if !errors.Is(err, metadata.ErrUnavailable) || attempt == 5 {
			t.Fatalf("create %d partitions (attempt %d): %v", metadata.MaxPartitionsPerWrite, attempt, err)
		}
		t.Logf("create %d partitions (attempt %d): %v; retrying", metadata.MaxPartitionsPerWrite, attempt, err)
	}
	if _, err := s.CreateTopic(testCtx(t), topicOf("ops", embeddedMaxTxnOps, 1)); !errors.Is(err, metadata.ErrTooLarge) || !strings.Contains(err.Error(), "max-txn-ops") {
		t.Fatalf("create beyond --max-txn-ops: %v, want metadata.ErrTooLarge naming it", err)
	}
	tp := bulkyTopic(0, maxRequestBytes)
	if _, err := s.CreateTopic(testCtx(t), tp); !errors.Is(err, metadata.ErrTooLarge) {
		t.Fatalf("create of %d bytes: %v, want metadata.ErrTooLarge", maxRequestBytes, err)
	}
	if _, ok := s.Cache().Topic("ops"); ok {
		t.Fatal("topic ops was created")
	}
}

// TestDiskStates: the disk is low below the reserve, or near it once
// AllowWrite refused a write (full for data); it stays low until an
// eighth of the reserve is free above it, and refusals far from the
// reserve (a budget not yet renewed after space was freed) do not count.
func TestDiskStates(t *testing.T) {
	g := &spaceGuard{dir: "/d", reserve: 800, log: testLogger()}
	for i, c := range []struct {
		avail   int64
		refused bool
		low     bool
		budget  int64
	}{
		{5000, false, false, 4200},
		{850, false, false, 50},
		{850, true, true, 0},
		{890, false, true, 0},
		{900, false, false, 100},
		{5000, true, false, 4200},
		{799, false, true, 0},
	} {
		g.refused.Store(c.refused)
		g.checkDisk(c.avail)
		if g.low != c.low || g.budget.Load() != c.budget {
			t.Fatalf("step %d (%d free, refused %v): low %v, budget %d; want %v, %d", i, c.avail, c.refused, g.low, g.budget.Load(), c.low, c.budget)
		}
	}
}
