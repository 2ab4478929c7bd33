package compaction

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// Sentinel errors.
var (
	// ErrBufferTooSmall: one batch of the dirty range holds more records
	// than the cleaner thread's share of log.cleaner.dedupe.buffer.size can
	// map; the log is left uncleaned (until a restart).
	ErrBufferTooSmall = errors.New("compaction: dedupe buffer too small for a batch")
	// ErrBusy: another cleaner thread is cleaning the log.
	ErrBusy = errors.New("compaction: log is being cleaned")
)

// ioBufferSize is the read buffer of a cleaner thread; it is taken from
// the thread's share of the dedupe buffer, so that the cleaner's memory
// stays within log.cleaner.dedupe.buffer.size.
const ioBufferSize = 1 << 20

// Stats describes one cleaning pass.
type Stats struct {
	Partition string
	// FirstDirty and End bound the dirty range whose keys were mapped;
	// End is the new cleaner checkpoint.
	FirstDirty, End int64
	// DirtyBytes is the size of the dirty segments mapped.
	DirtyBytes int64
	// BytesRead counts both scans (map building and copying); BytesWritten
	// the cleaned segments.
	BytesRead, BytesWritten int64
	MapEntries              int
	Segments                int // old segments replaced
	Batches                 int64
	BatchesRewritten        int64
	Records                 int64 // records decoded in the copy scan
	RecordsRemoved          int64 // superseded, keyless, aborted and expired tombstones
	TombstonesRemoved       int64 // tombstones past their delete horizon
	AbortedRemoved          int64 // records of aborted transactions
	MarkersRemoved          int64 // transaction markers past their delete horizon
	Elapsed                 time.Duration
}

// thread is the memory of one cleaner thread: its offset map and read
// buffer, reused by every pass it runs.
type thread struct {
	m  *offsetMap
	rd batchReader
	hs []keyHash // scratch: the key hashes of one batch
}

// Cleaner compacts the logs of topics with cleanup.policy containing
// compact: each pass picks the most urgent cleanable log (see plan), maps
// the latest offset of every key in its dirty range and rewrites its
// sealed segments without the superseded records. See the package doc.
type Cleaner struct {
	set Settings
	src Source
	log *slog.Logger
	thr *throttler

	// threads holds the idle thread states; a pass takes one.
	threads chan *thread

	mu     sync.Mutex
	busy   map[*local.Log]bool
	broken map[*local.Log]bool // failed with an unexpected error: skipped until restart
}

// NewCleaner makes a cleaner with set.CleanerThreads thread states (at
// least one), each with an equal share of set.DedupeBufferSize.
func NewCleaner(set Settings, src Source) *Cleaner {
	set = set.withDefaults()
	n := max(set.CleanerThreads, 1)
	c := &Cleaner{set: set, src: src, log: set.Logger, thr: newThrottler(set.IOMaxBytesPerSecond),
		threads: make(chan *thread, n), busy: map[*local.Log]bool{}, broken: map[*local.Log]bool{}}
	share := set.DedupeBufferSize / int64(n)
	io := min(int64(ioBufferSize), max(share/8, 4096))
	for range n {
		c.threads <- &thread{m: newOffsetMap(share - io), rd: batchReader{r: bufio.NewReaderSize(nil, int(io))}}
	}
	return c
}

// MapCapacity is the most keys one pass of one thread can map.
func (c *Cleaner) MapCapacity() int {
	th := <-c.threads
	defer func() { c.threads <- th }()
	return th.m.capacity()
}

// CleanDirtiest cleans the most urgent cleanable log that no other thread
// is cleaning; ok is false when there is none. It waits for an idle
// thread state first.
func (c *Cleaner) CleanDirtiest(ctx context.Context) (st Stats, ok bool, err error) {
	th, err := c.takeThread(ctx)
	if err != nil {
		return Stats{}, false, err
	}
	defer func() { c.threads <- th }()
	pl, ok := c.pick()
	if !ok {
		return Stats{}, false, nil
	}
	defer c.release(pl.log)
	st, err = c.run(ctx, th, &pl)
	return st, true, err
}

// Clean cleans p's log now, whatever its dirty ratio (tests, tools,
// benchmarks). It fails with ErrBusy while a thread cleans it.
func (c *Cleaner) Clean(ctx context.Context, p Partition) (Stats, error) {
	th, err := c.takeThread(ctx)
	if err != nil {
		return Stats{}, err
	}
	defer func() { c.threads <- th }()
	pl, ok := makePlan(p, nowMs())
	if !ok {
		return Stats{Partition: name(p)}, nil
	}
	c.mu.Lock()
	if c.busy[pl.log] {
		c.mu.Unlock()
		return Stats{}, ErrBusy
	}
	c.busy[pl.log] = true
	c.mu.Unlock()
	defer c.release(pl.log)
	return c.run(ctx, th, &pl)
}

// takeThread waits for an idle thread state.
func (c *Cleaner) takeThread(ctx context.Context) (*thread, error) {
	select {
	case th := <-c.threads:
		return th, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pick chooses the most urgent cleanable log and marks it busy.
func (c *Cleaner) pick() (plan, bool) {
	now := nowMs()
	var best plan
	found := false
	parts := c.src()
	c.forgetGone(parts)
	for _, p := range parts {
		pl, ok := makePlan(p, now)
		if !ok || !pl.cleanable() {
			continue
		}
		c.mu.Lock()
		skip := c.busy[pl.log] || c.broken[pl.log]
		c.mu.Unlock()
		if !skip && (!found || pl.before(&best)) {
			best, found = pl, true
		}
	}
	if !found {
		return plan{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy[best.log] {
		return plan{}, false // taken by another thread meanwhile; it will be back
	}
	c.busy[best.log] = true
	return best, true
}

// forgetGone drops the uncleanable marks of logs no longer served
// (deleted topics), so they do not pile up.
func (c *Cleaner) forgetGone(parts []Partition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.broken) == 0 {
		return
	}
	live := make(map[*local.Log]bool, len(parts))
	for _, p := range parts {
		live[p.Log()] = true
	}
	for l := range c.broken {
		if !live[l] {
			delete(c.broken, l)
		}
	}
}

// release unmarks a log once its pass is over.
func (c *Cleaner) release(l *local.Log) {
	c.mu.Lock()
	delete(c.busy, l)
	c.mu.Unlock()
}

// run performs a pass and sorts out its outcome: a log that changed or
// closed under the pass is simply retried later; any other failure marks
// the log uncleanable until restart (as Kafka does).
func (c *Cleaner) run(ctx context.Context, th *thread, pl *plan) (Stats, error) {
	start := time.Now()
	st, err := c.clean(ctx, th, pl)
	st.Elapsed = time.Since(start)
	switch {
	case err == nil:
		c.log.Info("cleaned log", "partition", st.Partition, "dirty", st.DirtyBytes, "read", st.BytesRead,
			"written", st.BytesWritten, "removed", st.RecordsRemoved, "tombstones", st.TombstonesRemoved, "aborted", st.AbortedRemoved,
			"markers", st.MarkersRemoved, "took", st.Elapsed)
	case errors.Is(err, local.ErrSegmentsChanged), errors.Is(err, local.ErrClosed), ctx.Err() != nil:
		c.log.Debug("cleaning pass abandoned", "partition", st.Partition, "err", err)
	default:
		c.log.Error("cannot clean log; skipping it until restart", "partition", st.Partition, "err", err)
		c.mu.Lock()
		c.broken[pl.log] = true
		c.mu.Unlock()
	}
	return st, err
}

// clean is one pass over pl's log: map the dirty range, rewrite the
// sealed segments below its end group by group, and checkpoint.
func (c *Cleaner) clean(ctx context.Context, th *thread, pl *plan) (Stats, error) {
	st := Stats{Partition: name(pl.p), FirstDirty: pl.firstDirty, End: pl.firstDirty}
	end, err := c.buildMap(ctx, th, pl, &st)
	if err != nil {
		return st, err
	}
	st.End, st.MapEntries = end, th.m.used
	f := &filter{m: th.m, hs: th.hs, end: end, nowMs: nowMs(), deleteRetentionMs: pl.cfg.DeleteRetentionMs,
		producerLast: pl.log.ProducerLastOffset, producerEpoch: pl.log.ProducerEpoch,
		maxBatchBytes: int(pl.cfg.MaxMessageBytes), txns: newTxnTracker(), minHorizon: math.MaxInt64, stats: &st}
	var todo []local.SegmentInfo
	for _, s := range pl.sealed {
		if s.BaseOffset < end {
			todo = append(todo, s)
		}
	}
	for _, g := range groups(todo, pl.cfg.SegmentBytes) {
		f.txns.add(pl.log.CollectAbortedTxns(g[0].BaseOffset, g[len(g)-1].NextOffset).Aborted)
		if err := c.cleanGroup(ctx, th, pl.log, g, f, &st); err != nil {
			return st, err
		}
	}
	return st, pl.log.SetCleanerPoint(local.CleanerPoint{FirstDirtyOffset: end, DeleteHorizonMs: f.minHorizon})
}

// buildMap maps the key of every record in the dirty range to its latest
// offset and returns where the mapped range ends: the end of the dirty
// range, or the first batch that did not fit the map.
func (c *Cleaner) buildMap(ctx context.Context, th *thread, pl *plan, st *Stats) (int64, error) {
	th.m.reset(pl.firstDirty)
	end := pl.firstDirty
	if pl.dirtyBytes == 0 {
		return end, nil
	}
	txns := newTxnTracker()
	for _, s := range pl.sealed {
		if s.NextOffset <= pl.firstDirty {
			continue
		}
		if s.BaseOffset >= pl.firstUncleanable {
			break
		}
		txns.add(pl.log.CollectAbortedTxns(s.BaseOffset, s.NextOffset).Aborted)
		stop, segEnd, err := c.mapSegment(ctx, th, pl, txns, s, end, st)
		if err != nil {
			return end, err
		}
		end = segEnd
		if stop {
			break
		}
	}
	return end, nil
}

// mapSegment adds the dirty records of segment s to the map and returns
// the offset up to which the dirty range is now mapped; stop says that
// the map filled up or the dirty range ended inside the segment. Records
// of aborted transactions (txns follows them) and markers are not
// mapped: an aborted record never hides an older one of its key.
func (c *Cleaner) mapSegment(ctx context.Context, th *thread, pl *plan, txns *txnTracker, s local.SegmentInfo, end int64, st *Stats) (stop bool, _ int64, _ error) {
	sl, err := pl.log.ReadSegment(s)
	if err != nil {
		return false, end, err
	}
	defer sl.Release()
	th.rd.reset(ctx, sl, c.thr)
	start := th.rd.bytes
	defer func() { st.DirtyBytes += th.rd.bytes - start; st.BytesRead += th.rd.bytes; th.rd.bytes = 0 }()
	for {
		b, err := th.rd.next()
		if err == io.EOF {
			return false, max(end, s.NextOffset), nil
		}
		if err != nil {
			return false, end, fmt.Errorf("map segment %d: %w", s.BaseOffset, err)
		}
		if b.LastOffset() >= pl.firstUncleanable || b.LastOffset()-pl.firstDirty >= maxSpan {
			return true, end, nil
		}
		skip := false
		if b.IsControl() {
			if _, err := txns.onControl(b); err != nil {
				return false, end, err
			}
			skip = true
		} else {
			skip = txns.onData(b)
		}
		switch {
		case b.LastOffset() < pl.firstDirty:
			continue
		case skip:
			end = b.LastOffset() + 1
			continue
		case !th.m.room(int(b.NumRecords())):
			if end == pl.firstDirty {
				return true, end, fmt.Errorf("batch at offset %d has %d records, the map holds %d: %w",
					b.BaseOffset(), b.NumRecords(), th.m.capacity(), ErrBufferTooSmall)
			}
			return true, end, nil
		}
		if th.hs, err = mapBatch(th.m, b, int(pl.cfg.MaxMessageBytes), th.hs); err != nil {
			return false, end, err
		}
		end = b.LastOffset() + 1
	}
}

// mapBatch records the offsets of b's keyed records at or after the
// map's base (a batch may start before the first dirty offset when that
// is a log start moved by DeleteRecords). A batch decompressing beyond
// maxBatchBytes (max.message.bytes) is an error, as on produce. hs is
// scratch space.
func mapBatch(m *offsetMap, b record.Batch, maxBatchBytes int, hs []keyHash) ([]keyHash, error) {
	recs, err := b.RecordsWithin(maxBatchBytes)
	if err != nil {
		return hs, fmt.Errorf("decode batch at offset %d: %w", b.BaseOffset(), err)
	}
	hs = hashKeys(m, recs, hs)
	m.touch(hs)
	for i, r := range recs {
		if off := b.Offset(r); r.Key != nil && off >= m.base {
			m.put(hs[i], off)
		}
	}
	return hs, nil
}

// hashKeys hashes the keys of recs into hs (reused), a zero hash for a
// null key.
func hashKeys(m *offsetMap, recs []record.Record, hs []keyHash) []keyHash {
	hs = hs[:0]
	for _, r := range recs {
		var h keyHash
		if r.Key != nil {
			h = m.hash(r.Key)
		}
		hs = append(hs, h)
	}
	return hs
}

// groups splits consecutive segments into runs to be cleaned into one
// segment each, as Kafka does: a run's old sizes add up to at most
// maxBytes (segment.bytes) and its offsets fit one segment's 32-bit
// relative offsets. Empty segments (left by earlier passes) join a run
// like any other and so are merged away.
func groups(segs []local.SegmentInfo, maxBytes int64) [][]local.SegmentInfo {
	maxBytes = min(max(maxBytes, 1), math.MaxInt32)
	var out [][]local.SegmentInfo
	for i := 0; i < len(segs); {
		j, size := i+1, segs[i].Size
		for j < len(segs) && size+segs[j].Size <= maxBytes && segs[j].NextOffset-1-segs[i].BaseOffset <= math.MaxUint32 {
			size += segs[j].Size
			j++
		}
		out = append(out, segs[i:j])
		i = j
	}
	return out
}

// cleanGroup rewrites the segments of g into one cleaned segment, with
// the transaction index entries of the aborted transactions whose batches
// stay, and swaps it in; a single segment that comes out unchanged is
// left alone.
func (c *Cleaner) cleanGroup(ctx context.Context, th *thread, l *local.Log, g []local.SegmentInfo, f *filter, st *Stats) error {
	cleaned, err := l.CreateCleaned(g[0].BaseOffset)
	if err != nil {
		return err
	}
	f.entries = f.entries[:0]
	changed, err := c.copyGroup(ctx, th, l, g, f, cleaned, st)
	if err == nil {
		var indexChanged bool
		indexChanged, err = writeTxnIndex(l, g, f.entries, cleaned)
		changed = changed || indexChanged
	}
	if err == nil {
		err = cleaned.Seal()
	}
	if err == nil && !changed && len(g) == 1 {
		return cleaned.Delete()
	}
	if err == nil {
		err = cleaned.Flush()
	}
	if err != nil {
		return errors.Join(err, cleaned.Delete())
	}
	// The swap needs no role or leader epoch: as Kafka's LogCleaner, the
	// cleaner works on every replica's log alike, only below the high
	// watermark (data no clean leader change truncates), and the swap is
	// refused (ErrSegmentsChanged) if a truncation or retention touched
	// these segments since they were listed.
	if err := l.ReplaceSegmentsIndexed(g, cleaned); err != nil {
		return err
	}
	st.Segments += len(g)
	st.BytesWritten += cleaned.Size()
	return c.thr.add(ctx, int(cleaned.Size()))
}

// copyGroup runs every batch of g through the filter into cleaned and
// reports whether any batch changed.
func (c *Cleaner) copyGroup(ctx context.Context, th *thread, l *local.Log, g []local.SegmentInfo, f *filter, cleaned segmentWriter, st *Stats) (changed bool, err error) {
	for _, s := range g {
		sl, err := l.ReadSegment(s)
		if err != nil {
			return changed, err
		}
		th.rd.reset(ctx, sl, c.thr)
		segChanged, err := copyBatches(&th.rd, f, cleaned)
		changed = changed || segChanged
		sl.Release()
		st.BytesRead += th.rd.bytes
		th.rd.bytes = 0
		if err != nil {
			return changed, fmt.Errorf("clean segment %d: %w", s.BaseOffset, err)
		}
	}
	return changed, nil
}

// copyBatches copies one segment's batches through the filter.
func copyBatches(rd *batchReader, f *filter, w segmentWriter) (changed bool, err error) {
	for {
		b, err := rd.next()
		if err == io.EOF {
			return changed, nil
		}
		if err != nil {
			return changed, err
		}
		out, err := f.apply(b)
		if err != nil {
			return changed, err
		}
		if out == nil || &out[0] != &b[0] {
			changed = true
		}
		if out != nil {
			if err := w.Append(out); err != nil {
				return changed, err
			}
		}
	}
}

// segmentWriter is what copyGroup needs of the cleaned segment.
type segmentWriter interface {
	Append(b record.Batch) error
}

// writeTxnIndex writes the transaction index entries that stay, entries,
// into cleaned and reports whether they differ from those of the
// segments g it replaces (Kafka's cleaner, too, drops the entries of
// aborted transactions whose batches are gone).
func writeTxnIndex(l *local.Log, g []local.SegmentInfo, entries []segment.AbortedTxn, cleaned *segment.Segment) (changed bool, err error) {
	var old []segment.AbortedTxn
	for _, s := range g {
		old = append(old, l.TxnIndexEntries(s)...)
	}
	for _, a := range entries {
		if err := cleaned.AppendAbortedTxn(a); err != nil {
			return false, fmt.Errorf("index aborted transaction at %d: %w", a.LastOffset, err)
		}
	}
	return !slices.Equal(old, entries), nil
}
