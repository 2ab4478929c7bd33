package compaction

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/tier/local"
)

// RetentionStats describes one retention pass.
type RetentionStats struct {
	Partitions      int   // partitions with cleanup.policy containing delete
	SegmentsDeleted int   // segments deleted
	BytesDeleted    int64 // their size
}

// Retention enforces delete retention (cleanup.policy containing delete):
// retention.ms by each segment's largest timestamp and retention.bytes per
// partition, on sealed segments only. The broker runs a pass every
// log.retention.check.interval.ms (see Service).
type Retention struct {
	set Settings
	src Source
	log *slog.Logger
}

// NewRetention makes a retention enforcer over the partitions of src.
func NewRetention(set Settings, src Source) *Retention {
	set = set.withDefaults()
	return &Retention{set: set, src: src, log: set.Logger}
}

// RunOnce applies retention to every partition once, with each topic's
// configuration as it is now. Partitions closed or deleted meanwhile are
// skipped; other failures are joined into the error after every partition
// was tried.
func (r *Retention) RunOnce() (RetentionStats, error) {
	now := nowMs()
	var st RetentionStats
	var errs []error
	for _, p := range r.src() {
		cfg := p.Config()
		if cfg == nil || !cfg.Delete {
			continue
		}
		st.Partitions++
		n, size, err := retain(p.Log(), cfg, now, highWatermark(p))
		st.SegmentsDeleted += n
		st.BytesDeleted += size
		switch {
		case errors.Is(err, local.ErrClosed):
		case err != nil:
			errs = append(errs, fmt.Errorf("retention of %s: %w", name(p), err))
		case n > 0:
			r.log.Info("deleted segments past retention", "partition", name(p), "segments", n, "bytes", size,
				"log_start_offset", p.Log().LogStartOffset())
		}
	}
	return st, errors.Join(errs...)
}

// retain deletes the oldest sealed segments of l that break the topic's
// retention at time nowMs, by moving the log start offset to the base of
// the first segment kept (local.Log.DeleteRecordsBefore, which checkpoints
// the new start before deleting files). As in Kafka:
//
//   - retention.ms: a segment expires when nowMs minus its largest record
//     timestamp exceeds retention.ms; deletion stops at the first segment
//     that has not expired (a segment with a future timestamp holds back
//     the ones after it).
//   - retention.bytes: while the partition's total size (active segment
//     included) minus the oldest segment's size stays at or above
//     retention.bytes, that segment goes.
//
// -1 disables either rule. The active segment is never deleted, nor a
// segment holding offsets at or above the high watermark hw. Tiered
// topics (remote.storage.enable) are left to the tier, which owns their
// local and total retention.
func retain(l *local.Log, cfg *config.Topic, nowMs, hw int64) (segments int, bytes int64, err error) {
	if cfg.RemoteStorageEnable {
		return 0, 0, nil
	}
	segs := l.Segments()
	if len(segs) < 2 {
		return 0, 0, nil
	}
	sealed := segs[:len(segs)-1]
	n := 0
	if cfg.RetentionMs >= 0 {
		for n < len(sealed) && nowMs-sealed[n].MaxTimestamp > cfg.RetentionMs {
			n++
		}
	}
	if cfg.RetentionBytes >= 0 {
		var total int64
		for _, s := range segs {
			total += s.Size
		}
		excess, m := total-cfg.RetentionBytes, 0
		for m < len(sealed) && excess-sealed[m].Size >= 0 {
			excess -= sealed[m].Size
			m++
		}
		n = max(n, m)
	}
	for n > 0 && segs[n].BaseOffset > hw {
		n-- // never past the high watermark
	}
	if n == 0 {
		return 0, 0, nil
	}
	for _, s := range sealed[:n] {
		bytes += s.Size
	}
	// No role check: retention applies to every replica alike (as in
	// Kafka), from the log's own state and never past the high watermark.
	if err := l.DeleteRecordsBefore(segs[n].BaseOffset); err != nil {
		return 0, 0, err
	}
	return n, bytes, nil
}
