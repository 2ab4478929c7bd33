package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/storage"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
)

// The space guard keeps the embedded etcd alive when space runs out.
// etcd exits the process when a write finds its disk full, and then
// cannot start until files are removed by hand; past its quota it merely
// refuses writes that would grow its database (the NOSPACE alarm), while
// reads, deletions, compaction and lease renewals go on. So:
//
//   - Disk: AllowWrite charges the broker's writes to that disk (appends
//     to logs there) against the free space above ReserveBytes measured
//     at the last check, so they cannot eat into the reserve even between
//     two checks. Every CheckInterval the guard measures the free space
//     of the data directory's filesystem; when it is below the reserve,
//     or near it (within an eighth) and AllowWrite refused a write since
//     the last check (the disk is full for data), it raises etcd's NOSPACE alarm itself, so metadata
//     writes fail cleanly instead of crashing etcd (and creating a topic
//     whose logs cannot be written is refused too). The reserve is what
//     etcd may still use for deletions, compaction and its next WAL
//     segment.
//   - Quota: at 80% of it the guard warns.
//   - Recovery: once the disk is above the reserve again (with an eighth
//     of it to spare, against flapping) and the database is below 80% of
//     the quota, the guard disarms the alarm. A database at the quota is
//     first compacted to the current revision and, if that brought its
//     live data below 80%, defragmented (etcd's documented recovery),
//     at most once every ten checks.
//
// The guard enforces the reserve only once Guard runs, which the broker
// starts after it registered: etcd refuses lease grants while the alarm is
// up, so a broker restarting on a low disk must register first. Until
// then (and at start-up) it only measures, and lifts an alarm left from
// before when the database fits the quota, so a restart with a larger
// quota recovers too.
//
// Concurrency: check runs on Guard's goroutine only (and once in
// StartEmbeddedWith, before Guard may start); the plain fields are its
// own. AllowWrite and SpaceStats may be called from any goroutine: they
// use the atomics.
type spaceGuard struct {
	srv      *etcdserver.EtcdServer
	dir      string
	quota    int64
	reserve  int64
	interval time.Duration
	log      *slog.Logger

	// budget is the free space above the reserve at the last check, less
	// what AllowWrite handed out since; 0 while the disk is below it.
	budget atomic.Int64
	// refused: AllowWrite refused a write since the last check.
	refused atomic.Bool
	stats   atomic.Pointer[SpaceStats]

	// The guard goroutine's own state.
	low, lowSoon, quotaWarned, liveWarned, statFailed bool
	lastCompact                                       time.Time
}

// SpaceStats is what the space guard measured last.
type SpaceStats struct {
	// BackendBytes and BackendInUseBytes are the size of etcd's database
	// file and the part of it holding live data (the rest is reclaimed
	// by defragmentation).
	BackendBytes, BackendInUseBytes int64
	// QuotaBytes is the database size past which etcd refuses growth.
	QuotaBytes int64
	// DiskAvailableBytes is the free space of the data directory's
	// filesystem (-1: unknown); ReserveBytes the part of it kept for etcd.
	DiskAvailableBytes, ReserveBytes int64
	// NoSpace: etcd's NOSPACE alarm is raised; writes that would grow
	// the database are refused.
	NoSpace bool
	// DiskLow: the disk has less free space than the reserve, or is full
	// for the broker's own writes (AllowWrite refused one).
	DiskLow bool
}

// errBelowReserve is AllowWrite's refusal.
var errBelowReserve = errors.New("etcdstore: disk space kept for the metadata store")

func newSpaceGuard(srv *etcdserver.EtcdServer, dir string, c EmbeddedConfig, log *slog.Logger) *spaceGuard {
	g := &spaceGuard{srv: srv, dir: dir, quota: c.QuotaBackendBytes, reserve: max(c.ReserveBytes, 0), interval: c.CheckInterval, log: log}
	if g.quota <= 0 {
		g.quota = storage.DefaultQuotaBytes
	}
	if g.interval <= 0 {
		g.interval = defaultCheckInterval
	}
	g.budget.Store(math.MaxInt64)
	return g
}

// Guard runs the space guard (space.go) until ctx ends: every
// CheckInterval it measures the disk and the database, raises etcd's
// NOSPACE alarm while the disk is below the reserve, and lifts it once
// space is back and the database fits its quota. Call it once, after the
// broker registered with the store.
func (m *Embedded) Guard(ctx context.Context) {
	g := m.space
	tick := time.NewTicker(g.interval)
	defer tick.Stop()
	for {
		g.check(ctx, true)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// check measures the disk and the database, raises (when enforce) or
// lifts the NOSPACE alarm and warns as the comment at the top says, and
// publishes the stats.
func (g *spaceGuard) check(ctx context.Context, enforce bool) {
	be := g.srv.Backend()
	st := SpaceStats{BackendBytes: be.Size(), BackendInUseBytes: be.SizeInUse(), QuotaBytes: g.quota, ReserveBytes: g.reserve, DiskAvailableBytes: -1}
	avail, err := diskAvailable(g.dir)
	switch {
	case err != nil:
		if !g.statFailed {
			g.log.Warn("cannot measure the free space of the metadata store's disk; its reserve is not enforced", "dir", g.dir, "err", err)
		}
		g.statFailed = true
	default:
		g.statFailed = false
		st.DiskAvailableBytes = avail
		g.checkDisk(avail)
	}
	alarmed := g.alarmed()
	if enforce && g.low && !alarmed {
		alarmed = g.raise(ctx)
	}
	g.warnQuota(st.BackendBytes)
	if alarmed && (!g.low || !enforce) && g.recover(ctx) {
		alarmed = false
		st.BackendBytes, st.BackendInUseBytes = be.Size(), be.SizeInUse()
	}
	st.NoSpace, st.DiskLow = alarmed, g.low
	g.stats.Store(&st)
}

// checkDisk updates the disk state and AllowWrite's budget from the free
// space avail.
func (g *spaceGuard) checkDisk(avail int64) {
	if g.reserve == 0 {
		return
	}
	// A refusal counts only near the reserve: once space was freed, the
	// refusals of a budget not yet renewed must not hold the disk low.
	refused, near := g.refused.Swap(false), avail < g.reserve+g.reserve/8
	low := avail < g.reserve || near && (refused || g.low)
	switch {
	case low && !g.low:
		g.log.Warn("the metadata store's disk is full down to its reserve: metadata writes and appends to logs on this disk are refused until space is freed (delete topics or records, or grow the disk)",
			"dir", g.dir, "available_bytes", avail, "metadata.etcd.reserve.bytes", g.reserve)
	case !low && g.low:
		g.log.Info("the metadata store's disk is above its reserve again: writes resume", "dir", g.dir, "available_bytes", avail)
	case !low && !g.lowSoon && avail < 2*g.reserve:
		g.log.Warn("the metadata store's disk is running out: below metadata.etcd.reserve.bytes, metadata writes and appends to logs on this disk stop",
			"dir", g.dir, "available_bytes", avail, "metadata.etcd.reserve.bytes", g.reserve)
	}
	g.low, g.lowSoon = low, avail < 2*g.reserve
	if low {
		g.budget.Store(0)
	} else {
		g.budget.Store(avail - g.reserve)
	}
}

// warnQuota warns once when the database passes 80% of the quota, and
// again after it went below 70%.
func (g *spaceGuard) warnQuota(size int64) {
	switch {
	case !g.quotaWarned && size >= g.quota/10*8:
		g.quotaWarned = true
		g.log.Warn("the metadata store's database is near its quota: past it, metadata writes are refused until topics are deleted",
			"backend_bytes", size, "metadata.etcd.quota.backend.bytes", g.quota)
	case g.quotaWarned && size < g.quota/10*7:
		g.quotaWarned = false
	}
}

// alarmed reports whether etcd's NOSPACE alarm is raised.
func (g *spaceGuard) alarmed() bool {
	for _, a := range g.srv.Alarms() {
		if a.Alarm == pb.AlarmType_NOSPACE {
			return true
		}
	}
	return false
}

// raise raises the NOSPACE alarm, reporting whether it is up.
func (g *spaceGuard) raise(ctx context.Context) bool {
	return g.alarm(ctx, pb.AlarmRequest_ACTIVATE) == nil
}

// alarm activates or deactivates this member's NOSPACE alarm.
func (g *spaceGuard) alarm(ctx context.Context, action pb.AlarmRequest_AlarmAction) error {
	ctx, cancel := context.WithTimeout(ctx, 5*g.interval+5*time.Second)
	defer cancel()
	_, err := g.srv.Alarm(ctx, &pb.AlarmRequest{Action: action, MemberID: uint64(g.srv.MemberID()), Alarm: pb.AlarmType_NOSPACE})
	if err != nil && ctx.Err() == nil {
		g.log.Error("cannot change the metadata store's NOSPACE alarm", "action", action.String(), "err", err)
	}
	return err
}

// recover disarms the NOSPACE alarm once the database is below 80% of the
// quota, compacting and defragmenting it first when it is not; it
// reports whether the alarm is down.
func (g *spaceGuard) recover(ctx context.Context) bool {
	be := g.srv.Backend()
	// Well below the quota: etcd raises the alarm when one write would
	// pass it, which can leave the database a write's size under it; an
	// alarm lifted there would only be raised again by the next write.
	target := g.quota / 10 * 8
	if be.Size() >= target {
		if time.Since(g.lastCompact) < 10*g.interval {
			return false
		}
		g.lastCompact = time.Now()
		if !g.compact(ctx) {
			return false
		}
		if live := be.SizeInUse(); live >= target {
			if !g.liveWarned {
				g.liveWarned = true
				g.log.Warn("the metadata store is full of live data: delete topics, or raise metadata.etcd.quota.backend.bytes",
					"in_use_bytes", live, "metadata.etcd.quota.backend.bytes", g.quota)
			}
			return false
		}
		if err := be.Defrag(); err != nil {
			g.log.Warn("cannot defragment the metadata store", "err", err)
			return false
		}
		if be.Size() >= target {
			return false
		}
	}
	if g.alarm(ctx, pb.AlarmRequest_DEACTIVATE) != nil {
		return false
	}
	g.liveWarned = false
	g.log.Info("the metadata store takes writes again", "backend_bytes", be.Size(), "metadata.etcd.quota.backend.bytes", g.quota)
	return true
}

// compact compacts the history up to the current revision and waits for
// the space to be freed; the stores' watches then re-list.
func (g *spaceGuard) compact(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := g.srv.Compact(ctx, &pb.CompactionRequest{Revision: g.srv.KV().Rev(), Physical: true})
	if err != nil && !errors.Is(err, mvcc.ErrCompacted) {
		if ctx.Err() == nil {
			g.log.Warn("cannot compact the metadata store", "err", err)
		}
		return false
	}
	return true
}

// allow charges n bytes against the budget; see Embedded.AllowWrite.
func (g *spaceGuard) allow(n int64) error {
	if g.reserve == 0 || g.budget.Add(-n) >= 0 {
		return nil
	}
	g.budget.Add(n) // refused: nothing is written
	g.refused.Store(true)
	return fmt.Errorf("%w: its disk (%s) is full down to the %d bytes kept for it (metadata.etcd.reserve.bytes)",
		errBelowReserve, g.dir, g.reserve)
}

// AllowWrite charges n bytes the broker is about to write to the disk of
// the embedded etcd's data directory against the free space above its
// reserve, and refuses the write with an error when they do not fit (the
// log appends on that disk ask it first). Always nil without a reserve.
func (m *Embedded) AllowWrite(n int64) error { return m.space.allow(n) }

// SpaceStats is what the space guard measured last.
func (m *Embedded) SpaceStats() SpaceStats { return *m.space.stats.Load() }

// Dir is the data directory.
func (m *Embedded) Dir() string { return m.space.dir }
