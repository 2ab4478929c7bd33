package remote

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/objstore"
)

// PartitionInfo is what the manager needs of one partition replica.
type PartitionInfo struct {
	Topic         string
	Partition     int32
	TopicID       metadata.TopicID
	Log           *local.Log
	Leader        bool // this broker leads the partition
	LeaderEpoch   int32
	HighWatermark int64
	Config        *config.Topic
}

// Source lists the partition replicas this broker holds.
type Source func() []PartitionInfo

// Options tune a Manager; zero values take the defaults noted.
type Options struct {
	Interval      time.Duration // task interval (30s)
	CacheDir      string        // chunk cache directory (required for reads)
	CacheBytes    int64         // on-disk chunk cache bound (256 MiB)
	MemoryBytes   int64         // in-memory chunk bound (the smaller of 64 MiB and CacheBytes)
	ReaderThreads int           // concurrent object reads (10)
	ChunkSize     int64         // ranged GET size (8 MiB)
	OrphanGrace   time.Duration // unknown objects younger than this are kept (2×Interval)
	Now           func() time.Time
	Logger        *slog.Logger
}

// OptionsFromConfig maps the broker keys remote.log.* to Options.
func OptionsFromConfig(b *config.Broker, cacheDir string, log *slog.Logger) Options {
	return Options{
		Interval:      time.Duration(b.RemoteLogManagerTaskIntervalMs) * time.Millisecond,
		CacheDir:      cacheDir,
		CacheBytes:    b.RemoteLogReaderCacheBytes,
		MemoryBytes:   b.RemoteLogReaderMemoryBytes,
		ReaderThreads: int(b.RemoteLogReaderThreads),
		Logger:        log,
	}
}

func (o *Options) fill() {
	if o.Interval <= 0 {
		o.Interval = 30 * time.Second
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 256 << 20
	}
	if o.ReaderThreads <= 0 {
		o.ReaderThreads = 10
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = 8 << 20
	}
	if o.MemoryBytes <= 0 {
		o.MemoryBytes = min(64<<20, o.CacheBytes)
	}
	if o.OrphanGrace <= 0 {
		o.OrphanGrace = 2 * o.Interval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Manager is the remote log manager of one broker: copier, expirer and
// the metadata view the reader uses.
type Manager struct {
	store  objstore.ObjectStore
	meta   metadata.RemoteSegments
	src    Source
	opts   Options
	log    *slog.Logger
	reader *Reader

	mu    sync.Mutex
	parts map[pkey]*view // guarded by mu
	seq   uint64         // guarded by mu; orders claims and plain reads
}

type pkey struct {
	id metadata.TopicID
	p  int32
}

// view is the cached metadata of one partition's remote segments.
type view struct {
	topic  string
	segs   []Segment // every record, by base offset then name
	loaded time.Time

	copied  int64  // copiedEnd(segs), for copyPending's check
	held    bool   // copyPending failed: wait for the next full pass
	claimed int32  // 1 + the leader epoch the records were claimed at (claim); 0: never
	claimAt uint64 // Manager.seq when claimed

	backlog int    // segments waiting to be copied, after the last task
	lastErr string // the last task's error ("" if it succeeded)
}

// New returns a manager over store and meta for the partitions of src.
func New(store objstore.ObjectStore, meta metadata.RemoteSegments, src Source, opts Options) (*Manager, error) {
	if store == nil || meta == nil || src == nil {
		return nil, errors.New("remote: nil store, metadata or source")
	}
	opts.fill()
	m := &Manager{store: store, meta: meta, src: src, opts: opts, log: opts.Logger, parts: map[pkey]*view{}}
	if opts.CacheDir != "" {
		r, err := newReader(m)
		if err != nil {
			return nil, err
		}
		m.reader = r
	}
	return m, nil
}

// Reader serves cold reads (nil without a cache directory).
func (m *Manager) Reader() *Reader { return m.reader }

// pendingPoll is how often Run looks, between full passes, for a leader
// partition with a sealed, committed segment not yet copied.
const pendingPoll = 200 * time.Millisecond

// Run runs the full task every interval until ctx is done, and in between
// copies newly sealed segments within about pendingPoll of their commit
// (see copyPending), so copy lag does not wait for the interval.
func (m *Manager) Run(ctx context.Context) {
	full := time.NewTicker(m.opts.Interval)
	defer full.Stop()
	poll := time.NewTicker(min(pendingPoll, m.opts.Interval))
	defer poll.Stop()
	for {
		m.RunOnce(ctx)
	wait:
		for {
			select {
			case <-ctx.Done():
				return
			case <-full.C:
				break wait
			case <-poll.C:
				m.copyPending(ctx)
			}
		}
	}
}

// copyPending copies, on the leaders, sealed and committed segments past
// what is copied and then applies local retention (also when nothing was
// left to copy but local retention has something to drop); it is the
// cheap check Run makes between full passes. The check reads only in-memory state
// (the local segment list and the cached copied end), so partitions with
// nothing to copy cost no metadata or object store call. A partition whose
// copy fails here is left to the next full pass (its hold is cleared when
// its metadata is reloaded), so an unreachable bucket is not retried every
// poll.
func (m *Manager) copyPending(ctx context.Context) {
	for _, pi := range m.src() {
		if ctx.Err() != nil {
			return
		}
		if !pi.Leader || pi.Log == nil || pi.Config == nil || !pi.Config.RemoteStorageEnable || pi.Config.RemoteLogCopyDisable {
			continue
		}
		k := pkey{pi.TopicID, pi.Partition}
		m.mu.Lock()
		v, loaded := m.parts[k]
		done, held := int64(-1), false
		if loaded {
			done, held = v.copied, v.held
		}
		m.mu.Unlock()
		if held {
			continue
		}
		if !uncopied(pi, done) {
			// Nothing to copy; but local retention may still have
			// something to drop (a segment sealed only after the poll
			// that copied up to it looked), which would otherwise wait
			// for the next full pass.
			if loaded && m.localExpiry(pi) >= 0 {
				m.noteResult(pi, m.expireLocal(pi))
			}
			continue
		}
		// A partition new since the last full pass, or newly led: claim
		// it, then look again.
		err := m.claim(ctx, pi)
		if segs, _ := m.segments(pi.TopicID, pi.Partition); err == nil && !uncopied(pi, copiedEnd(segs)) {
			continue
		}
		if err == nil {
			err = m.copySegments(ctx, pi)
		}
		if err == nil {
			err = m.expireLocal(pi)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			m.mu.Lock()
			if v, ok := m.parts[k]; ok {
				v.held = true
			} else { // never loaded: an empty, stale view that holds
				m.parts[k] = &view{topic: pi.Topic, copied: -1, held: true}
			}
			m.mu.Unlock()
		}
		m.noteResult(pi, err)
	}
}

// uncopied reports whether pi has a sealed, stable, non-empty segment
// ending past done, the copied end: what copySegments would copy.
func uncopied(pi PartitionInfo, done int64) bool {
	for _, ls := range pi.Log.Segments() {
		if !ls.Sealed || ls.NextOffset > copyBound(pi) {
			return false
		}
		if ls.NextOffset > ls.BaseOffset && ls.NextOffset-1 > done {
			return true
		}
	}
	return false
}

// RunOnce runs one pass over every tiered partition: copy, expire and
// clean (leaders), local retention (every replica).
func (m *Manager) RunOnce(ctx context.Context) {
	for _, pi := range m.src() {
		if ctx.Err() != nil {
			return
		}
		if pi.Config == nil || pi.Log == nil {
			continue
		}
		if !pi.Config.RemoteStorageEnable {
			if pi.Config.RemoteLogDeleteOnDisable && pi.Leader {
				if err := m.deleteAll(ctx, pi); err != nil && ctx.Err() == nil {
					m.log.Warn("remote: delete on disable", "topic", pi.Topic, "partition", pi.Partition, "err", err)
				}
			}
			continue
		}
		err := m.runPartition(ctx, pi)
		if ctx.Err() == nil {
			m.noteResult(pi, err)
		}
	}
}

// Close drops the reader's chunks, in memory and on disk.
func (m *Manager) Close() error {
	if m.reader != nil {
		return m.reader.close()
	}
	return nil
}

func (m *Manager) runPartition(ctx context.Context, pi PartitionInfo) error {
	if _, err := m.refresh(ctx, pi.TopicID, pi.Partition, pi.Topic); err != nil {
		return err
	}
	var errs []error
	if pi.Leader {
		errs = append(errs, m.leaderTasks(ctx, pi))
	}
	if err := m.expireLocal(pi); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// leaderTasks claims the partition at the leader's epoch, then cleans,
// copies and applies remote retention.
func (m *Manager) leaderTasks(ctx context.Context, pi PartitionInfo) error {
	if err := m.claim(ctx, pi); err != nil {
		return err
	}
	var errs []error
	if err := m.cleanOrphans(ctx, pi); err != nil {
		errs = append(errs, err)
	}
	if !pi.Config.RemoteLogCopyDisable {
		if err := m.copySegments(ctx, pi); err != nil {
			errs = append(errs, err)
		}
	}
	if err := m.expireRemote(ctx, pi); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// refresh reloads a partition's records from the metadata store.
func (m *Manager) refresh(ctx context.Context, id metadata.TopicID, p int32, topic string) ([]Segment, error) {
	m.mu.Lock()
	m.seq++
	start := m.seq
	m.mu.Unlock()
	names, vals, err := m.meta.ListRemoteSegments(ctx, id, p)
	if err != nil {
		return nil, fmt.Errorf("remote: list segments of %s-%d: %w", topic, p, err)
	}
	return m.load(pkey{id, p}, topic, names, vals, -1, start), nil
}

// claim loads a leader's view through ClaimRemoteSegments once
// per leader epoch, before its first copy: a view read before the fence
// was raised may miss a copy the deposed leader finished late, and
// copying from it would record that range twice.
func (m *Manager) claim(ctx context.Context, pi PartitionInfo) error {
	k := pkey{pi.TopicID, pi.Partition}
	m.mu.Lock()
	v, ok := m.parts[k]
	done := ok && v.claimed == pi.LeaderEpoch+1
	m.mu.Unlock()
	if done {
		return nil
	}
	names, vals, err := m.meta.ClaimRemoteSegments(ctx, pi.TopicID, pi.Partition, pi.LeaderEpoch)
	if err != nil {
		return fmt.Errorf("remote: claim %s-%d at leader epoch %d: %w", pi.Topic, pi.Partition, pi.LeaderEpoch, err)
	}
	m.load(k, pi.Topic, names, vals, pi.LeaderEpoch, 0)
	return nil
}

// load decodes records into k's view; claimedEpoch is the epoch they were
// claimed at, or -1 for a plain read begun at seq start, which keeps the
// view's claim only if it began after it (one begun before may predate
// the fence; the next copy then claims again).
func (m *Manager) load(k pkey, topic string, names []string, vals [][]byte, claimedEpoch int32, start uint64) []Segment {
	segs := make([]Segment, 0, len(vals))
	for i, v := range vals {
		var s Segment
		if err := json.Unmarshal(v, &s); err != nil {
			m.log.Warn("remote: skipping unreadable segment record", "name", names[i], "err", err)
			continue
		}
		segs = append(segs, s)
	}
	slices.SortFunc(segs, func(a, b Segment) int {
		if a.BaseOffset != b.BaseOffset {
			return int(a.BaseOffset - b.BaseOffset)
		}
		return compareStrings(a.CopyID, b.CopyID)
	})
	m.mu.Lock()
	m.seq++
	v := &view{topic: topic, segs: segs, loaded: m.opts.Now(), copied: copiedEnd(segs), claimed: claimedEpoch + 1, claimAt: m.seq}
	if old, ok := m.parts[k]; ok {
		v.backlog, v.lastErr = old.backlog, old.lastErr
		if topic == "" {
			v.topic = old.topic
		}
		if claimedEpoch < 0 && old.claimAt < start {
			v.claimed, v.claimAt = old.claimed, old.claimAt
		}
	}
	m.parts[k] = v
	m.mu.Unlock()
	return segs
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// segments returns the cached records (nil when never loaded).
func (m *Manager) segments(id metadata.TopicID, p int32) ([]Segment, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.parts[pkey{id, p}]
	if !ok {
		return nil, false
	}
	return v.segs, true
}

// finished returns the finished copies, by base offset.
func finished(segs []Segment) []Segment {
	var out []Segment
	for _, s := range segs {
		if s.State == CopyFinished {
			out = append(out, s)
		}
	}
	return out
}

// copiedEnd is the highest end offset ever copied (-1: none), counting
// copies deleted since but not interrupted ones.
func copiedEnd(segs []Segment) int64 {
	end := int64(-1)
	for _, s := range segs {
		if s.Copied {
			end = max(end, s.EndOffset)
		}
	}
	return end
}

// putRecord writes s's record, fenced by epoch.
func (m *Manager) putRecord(ctx context.Context, id metadata.TopicID, s *Segment, epoch int32) error {
	s.UpdatedMs = m.opts.Now().UnixMilli()
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("remote: encode segment %s: %w", s.Name(), err)
	}
	if err := m.meta.PutRemoteSegment(ctx, id, s.Partition, s.Name(), b, epoch); err != nil {
		return fmt.Errorf("remote: record %s as %s: %w", s.Name(), s.State, err)
	}
	return nil
}

// dir is the object key directory of a partition.
func dir(topic string, id metadata.TopicID, p int32) string {
	return fmt.Sprintf("%s-%s/%d/", topic, hex.EncodeToString(id[:]), p)
}

// objectSuffixes are the objects every copy has.
var objectSuffixes = []string{".log", ".index", ".timeindex", ".epochs", ".producers"}

// txnIndexSuffix names a copy's transaction index object, which only
// copies with Segment.TxnIndex have.
const txnIndexSuffix = ".txnindex"

// MayDeleteLocal reports whether a local segment ending before nextOffset
// of a tiered partition may be deleted: its offsets are in a finished
// remote copy. Callers (retention) must keep segments for which it is
// false. It answers from the last loaded metadata.
func (m *Manager) MayDeleteLocal(id metadata.TopicID, partition int32, nextOffset int64) bool {
	segs, _ := m.segments(id, partition)
	return coveredUpTo(segs) >= nextOffset-1
}

// coveredUpTo is the last offset up to which the finished copies (and the
// expired ones before them) cover the log without a gap, -1 if none.
func coveredUpTo(segs []Segment) int64 {
	end := int64(-1)
	for _, s := range segs {
		if !s.Copied {
			continue
		}
		if s.State == CopyFinished && end >= 0 && s.BaseOffset > end+1 {
			break // a gap: nothing past it counts
		}
		end = max(end, s.EndOffset)
	}
	return end
}
