package compaction

import (
	"math"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
)

// plan is a compacted log's state as the cleaner sees it at one moment:
// which part is clean, which is dirty and cleanable, and whether it is due.
//
// As in Kafka, offsets below firstDirty were cleaned by an earlier pass;
// [firstDirty, firstUncleanable) is the cleanable dirty range. The range
// ends at the active segment, the high watermark or the first unstable
// offset (the first offset of a transaction still open, or whose marker
// is not yet below the high watermark: the cleaner never goes past the
// last stable offset), or earlier at the first segment holding a record
// younger than min.compaction.lag.ms (by the segment's largest
// timestamp).
type plan struct {
	p   Partition
	log *local.Log
	cfg *config.Topic
	cp  local.CleanerPoint

	// sealed are the log's sealed segments, oldest first.
	sealed []local.SegmentInfo
	// firstDirty and firstUncleanable bound the cleanable dirty range.
	firstDirty, firstUncleanable int64
	// cleanBytes and dirtyBytes are the sizes of the segments below
	// firstDirty and of those overlapping the dirty range.
	cleanBytes, dirtyBytes int64
	// ratio is dirtyBytes over cleanBytes+dirtyBytes.
	ratio float64
	// overdue: a dirty record is older than max.compaction.lag.ms.
	overdue bool
	// horizonDue: a kept tombstone's delete horizon has passed.
	horizonDue bool
}

// makePlan looks at a partition's log at time nowMs. ok is false when the
// topic is not compacted.
func makePlan(p Partition, nowMs int64) (pl plan, ok bool) {
	cfg := p.Config()
	if cfg == nil || !cfg.Compact {
		return plan{}, false
	}
	l := p.Log()
	segs := l.Segments()
	if len(segs) == 0 {
		return plan{}, false
	}
	pl = plan{p: p, log: l, cfg: cfg, cp: l.CleanerPoint(), sealed: segs[:len(segs)-1]}
	activeBase := segs[len(segs)-1].BaseOffset
	start := l.LogStartOffset()
	pl.firstDirty = pl.cp.FirstDirtyOffset
	if pl.firstDirty < start || pl.firstDirty > activeBase {
		pl.firstDirty = start
	}
	pl.firstUncleanable = min(activeBase, highWatermark(p))
	if fu, ok := l.FirstUnstableOffset(); ok {
		pl.firstUncleanable = min(pl.firstUncleanable, fu)
	}
	if lag := cfg.MinCompactionLagMs; lag > 0 {
		for _, s := range pl.sealed {
			if s.NextOffset > pl.firstDirty && s.MaxTimestamp > nowMs-lag {
				pl.firstUncleanable = s.BaseOffset
				break
			}
		}
	}
	for _, s := range pl.sealed {
		switch {
		case s.NextOffset <= pl.firstDirty:
			pl.cleanBytes += s.Size
		case s.BaseOffset < pl.firstUncleanable:
			pl.dirtyBytes += s.Size
		}
	}
	if pl.firstUncleanable <= pl.firstDirty {
		pl.dirtyBytes = 0
	}
	if total := pl.cleanBytes + pl.dirtyBytes; total > 0 {
		pl.ratio = float64(pl.dirtyBytes) / float64(total)
	}
	if pl.dirtyBytes > 0 && cfg.MaxCompactionLagMs < math.MaxInt64 {
		if ts, found := pl.firstDirtyTimestamp(); found && nowMs-ts > cfg.MaxCompactionLagMs {
			pl.overdue = true
		}
	}
	// A clean part, where a kept horizon lies, may end inside a segment
	// (a dirty range cut at the first unstable offset).
	pl.horizonDue = len(pl.sealed) > 0 && pl.sealed[0].BaseOffset < pl.firstDirty && nowMs >= pl.cp.DeleteHorizonMs
	return pl, true
}

// cleanable reports whether the log should be cleaned now: enough of it
// is dirty (strictly more than min.cleanable.dirty.ratio, as in Kafka), a
// dirty record is overdue, or a tombstone's delete horizon has passed.
func (pl *plan) cleanable() bool {
	return (pl.dirtyBytes > 0 && (pl.ratio > pl.cfg.MinCleanableDirtyRatio || pl.overdue)) || pl.horizonDue
}

// before orders plans by urgency: overdue logs first, then the dirtiest.
func (pl *plan) before(o *plan) bool {
	if pl.overdue != o.overdue {
		return pl.overdue
	}
	return pl.ratio > o.ratio
}

// firstDirtyTimestamp is the first timestamp of the batch holding
// firstDirty (Kafka uses the first dirty segment's first batch).
func (pl *plan) firstDirtyTimestamp() (int64, bool) {
	sl, err := pl.log.Read(pl.firstDirty, 1, -1)
	if err != nil || sl.Len < record.HeaderSize {
		sl.Release()
		return 0, false
	}
	defer sl.Release()
	hdr := make([]byte, record.HeaderSize)
	if _, err := sl.File.ReadAt(hdr, sl.Pos); err != nil {
		return 0, false
	}
	b := record.Batch(hdr)
	if b.HasDeleteHorizon() {
		return b.MaxTimestamp(), true
	}
	return b.FirstTimestamp(), true
}
