package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/remote"
	"github.com/strata-broker/strata/tier/segment"
)

// metaFile names the topic id owning a partition directory.
const metaFile = "partition.metadata"

// Key names a partition.
type Key struct {
	Topic     string
	Partition int32
}

// Manager keeps the partitions this broker serves in step with metadata.
type Manager struct {
	dir    string
	nodeID int32
	cfg    *config.Live // topics resolve against its current log.* defaults
	cache  *metadata.Cache
	log    *slog.Logger

	isr     ISRWriter
	fetcher Fetcher
	tier    *remote.Reader // cold reads (SetTier); nil without tiering
	// space is asked before every append (SetSpaceCheck); nil: never.
	space func(n int64) error

	budget Budget             // partition limit and segment file bound
	files  *segment.FileCache // sealed segments' open files, shared by every log

	mu    sync.RWMutex
	parts map[Key]*Partition
	// gen counts the Syncs done, so that a handle kept from Get can be
	// known still current (Generation).
	gen atomic.Int64

	// removing runs the removal of deleted logs' directories, which can
	// wait seconds on writeback, off the Sync path (Close waits for it).
	removing sync.WaitGroup
}

// ISRWriter writes a partition's new state to the metadata store, failing
// when its partition epoch is no longer prevEpoch (metadata.Partitions).
type ISRWriter interface {
	CompareAndSetPartition(ctx context.Context, topic string, partition, prevEpoch int32, next metadata.PartitionState) (int64, error)
}

// Fetcher replicates the partitions this broker follows from their
// leaders (broker/replica). Follow is called after every Sync with the
// complete set.
type Fetcher interface {
	Follow(parts []*Partition)
}

// SetReplication connects the manager to the metadata store for ISR
// changes and to the follower fetcher. Call before Run.
func (m *Manager) SetReplication(w ISRWriter, f Fetcher) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.isr, m.fetcher = w, f
}

// SetSpaceCheck makes every log ask f before an append writes n bytes
// (local.Config.SpaceCheck): the broker keeps the free space of the
// embedded metadata store's disk this way. Call before the first Sync.
func (m *Manager) SetSpaceCheck(f func(n int64) error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.space = f
}

// NewManager opens no logs yet; call Sync (and Run to follow changes).
// Topics' configs resolve against the current configuration of cfg; the
// partition limit and the bound of open segment files come from
// BudgetFor(its static configuration).
func NewManager(cfg *config.Live, cache *metadata.Cache, log *slog.Logger) (*Manager, error) {
	static := cfg.Static()
	dir := static.LogDirs[0]
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create log dir %s: %w", dir, err)
	}
	b := BudgetFor(static)
	return &Manager{dir: dir, nodeID: static.NodeID, cfg: cfg, cache: cache, log: log, parts: map[Key]*Partition{},
		budget: b, files: segment.NewFileCache(b.SegmentFiles)}, nil
}

// Budget is the broker's partition limit and open segment file bound.
func (m *Manager) Budget() Budget { return m.budget }

// OpenSegmentFiles is how many sealed segments' files are open now.
func (m *Manager) OpenSegmentFiles() int { return m.files.Len() }

// Get returns the partition if this broker serves it.
func (m *Manager) Get(topic string, partition int32) (*Partition, bool) {
	m.mu.RLock()
	p, ok := m.parts[Key{topic, partition}]
	m.mu.RUnlock()
	return p, ok
}

// Generation changes at the end of every Sync: a partition Get returned
// after Generation returned g is still the one it returns while
// Generation returns g.
func (m *Manager) Generation() int64 { return m.gen.Load() }

// All returns every partition served here, in no particular order.
func (m *Manager) All() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		out = append(out, p)
	}
	return out
}

// producerExpiryCheck is how often Run expires idle producers (Kafka's
// producer.id.expiration.check.interval.ms default).
const producerExpiryCheck = 10 * time.Minute

// Run applies metadata changes, and changes of the broker's dynamic
// configs (topics' configs resolve against its log.* defaults), until ctx
// is done. As leader it also shrinks the ISR of partitions whose
// followers lag more than replica.lag.time.max.ms, it checkpoints high
// watermarks, and it expires idle producers (producer.id.expiration.ms).
func (m *Manager) Run(ctx context.Context) {
	static := m.cfg.Static()
	lag := time.Duration(static.ReplicaLagTimeMaxMs) * time.Millisecond
	tick := time.NewTicker(min(lag/2, time.Second))
	defer tick.Stop()
	hwEvery := time.Duration(static.ReplicaHighWatermarkCheckpointIntervalMs) * time.Millisecond
	if hwEvery <= 0 {
		hwEvery = 5 * time.Second // Kafka's default
	}
	hwTick := time.NewTicker(hwEvery)
	defer hwTick.Stop()
	expiryTick := time.NewTicker(producerExpiryCheck)
	defer expiryTick.Stop()
	for {
		changed, reconfigured := m.cache.Changed(), m.cfg.Changed()
		if err := m.Sync(); err != nil {
			m.log.Error("sync partitions with metadata", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-reconfigured:
		case now := <-tick.C:
			for _, p := range m.All() {
				if next := p.laggingISR(now, lag); next != nil {
					m.changeISR(ctx, p, next)
				}
			}
		case <-hwTick.C:
			for _, p := range m.All() {
				if err := p.checkpointHW(); err != nil {
					m.log.Warn("checkpoint high watermark", "topic", p.Topic, "partition", p.Index, "err", err)
				}
			}
		case now := <-expiryTick.C:
			for _, p := range m.All() {
				p.log.ExpireProducers(now.UnixMilli())
			}
		}
	}
}

// ChangeISR writes a leader's new ISR for p (a follower caught up, or
// fell behind), by compare-and-set on the partition epoch, as Kafka's
// AlterPartition is checked against it: the one write of partition state
// not made by the controller. A write based on a state the controller
// (or anyone) changed meanwhile loses and changes nothing; the metadata
// watch applies a winning one.
func (m *Manager) changeISR(ctx context.Context, p *Partition, isr []int32) {
	m.mu.RLock()
	w := m.isr
	m.mu.RUnlock()
	if w == nil {
		p.isrWritten()
		return
	}
	st := p.stateCopy()
	next := st.Clone()
	next.ISR = isr
	next.PartitionEpoch = st.PartitionEpoch + 1
	go func() {
		if _, err := w.CompareAndSetPartition(ctx, p.Topic, p.Index, st.PartitionEpoch, next); err != nil {
			m.log.Info("ISR change not written", "topic", p.Topic, "partition", p.Index, "isr", isr, "err", err)
			p.isrWritten()
			return
		}
		m.log.Info("ISR changed", "topic", p.Topic, "partition", p.Index, "from", st.ISR, "to", isr)
	}()
}

// ExpandISR is called by the fetch handler when a follower caught up. Only
// registered (live) brokers that are not in controlled shutdown are taken
// in: a broker whose lease is gone, or that is shutting down and fetched
// one last time, stays out (the controller takes it out of every ISR).
func (m *Manager) ExpandISR(ctx context.Context, p *Partition, isr []int32) {
	for _, r := range isr {
		if b, live := m.cache.Broker(r); (!live || b.ShuttingDown) && r != m.nodeID {
			p.isrWritten()
			return
		}
	}
	m.changeISR(ctx, p, isr)
}

// Sync opens, reconfigures and removes partitions so that they match the
// metadata cache and the broker's current configuration. It is idempotent.
// Partitions no longer assigned here go first, so that their room counts
// for new ones; beyond the partition limit a partition is not opened
// (ErrPartitionLimit) and stays offline. A topic whose configs do not
// resolve (a dynamic broker default that this broker's static
// configuration does not fit) keeps the partitions it has open, with
// their last configuration, and opens no others; the error names it.
func (m *Manager) Sync() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.gen.Add(1)
	b := m.cfg.Load()
	type assigned struct {
		t      metadata.Topic
		cfg    config.Topic
		cfgErr error
	}
	var errs []error
	var topics []assigned
	want := map[Key]bool{}
	for _, t := range m.cache.Topics() {
		tcfg, cfgErr := b.ResolveTopic(t.Configs)
		if cfgErr != nil {
			errs = append(errs, fmt.Errorf("topic %s configs: %w", t.Name, cfgErr))
		}
		topics = append(topics, assigned{t, tcfg, cfgErr})
		for idx, st := range t.Partitions {
			if slices.Contains(st.Replicas, m.nodeID) {
				want[Key{t.Name, idx}] = true
			}
		}
	}
	for k, p := range m.parts {
		if !want[k] {
			m.remove(p)
			delete(m.parts, k)
		}
	}
	var following []*Partition
	now := time.Now()
	for _, a := range topics {
		// In topic and partition order, so that which partitions stay
		// offline past the limit does not depend on map order.
		for _, idx := range slices.Sorted(maps.Keys(a.t.Partitions)) {
			st := a.t.Partitions[idx]
			k := Key{a.t.Name, idx}
			if !want[k] {
				continue
			}
			p, ok := m.parts[k]
			if ok && p.TopicID != a.t.ID {
				m.remove(p)
				delete(m.parts, k)
				ok = false
			}
			if !ok {
				if a.cfgErr != nil {
					continue
				}
				var err error
				if p, err = m.open(b, a.t.ID, k, &a.cfg, len(st.Replicas)); err != nil {
					errs = append(errs, err)
					continue
				}
				m.parts[k] = p
			} else if a.cfgErr == nil && *p.cfg.Load() != a.cfg {
				c := a.cfg
				p.cfg.Store(&c)
				p.log.SetConfig(m.logConfig(b, &c))
			}
			p.applyState(st, now)
			if st.Leader != m.nodeID {
				following = append(following, p)
			}
		}
	}
	if m.fetcher != nil {
		m.fetcher.Follow(following)
	}
	return errors.Join(errs...)
}

// logConfig is the log configuration of a partition of a topic with
// configuration t on a broker with configuration b.
func (m *Manager) logConfig(b *config.Broker, t *config.Topic) local.Config {
	c := logConfig(b, t, m.space)
	c.Files = m.files
	return c
}

// open opens (or creates) the log of a partition owned by topic id, on a
// broker with configuration b.
func (m *Manager) open(b *config.Broker, id metadata.TopicID, k Key, tcfg *config.Topic, replicas int) (*Partition, error) {
	if len(m.parts) >= int(m.budget.MaxPartitions) {
		return nil, fmt.Errorf("open %s-%d: broker %d hosts %d partitions, its limit (max.broker.partitions, capped by the open-file limit %d): %w",
			k.Topic, k.Partition, m.nodeID, len(m.parts), m.budget.OpenFiles, ErrPartitionLimit)
	}
	dir := filepath.Join(m.dir, k.Topic+"-"+strconv.Itoa(int(k.Partition)))
	if b, err := os.ReadFile(filepath.Join(dir, metaFile)); err == nil {
		if got := strings.TrimSpace(strings.TrimPrefix(string(b), "topic_id: ")); got != id.String() {
			m.log.Info("removing log of an older topic with the same name", "dir", dir, "old_id", got, "id", id)
			if err := os.RemoveAll(dir); err != nil {
				return nil, fmt.Errorf("remove stale partition dir %s: %w", dir, err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create partition dir %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, metaFile), []byte("topic_id: "+id.String()+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", metaFile, err)
	}
	l, err := local.Open(dir, m.logConfig(b, tcfg), m.log.With("partition", k.Topic+"-"+strconv.Itoa(int(k.Partition))))
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	p := &Partition{Topic: k.Topic, Index: k.Partition, TopicID: id, log: l, nodeID: m.nodeID, tier: m.tier}
	p.leader.Store(metadata.NoLeader)
	p.hwSaved.Store(-1)
	c := *tcfg
	p.cfg.Store(&c)
	p.loadHW(replicas)
	return p, nil
}

// remove deletes a partition's log (topic deleted or moved away).
func (m *Manager) remove(p *Partition) {
	p.wake()
	trash, err := p.log.Delete()
	if err != nil {
		m.log.Error("delete partition log", "topic", p.Topic, "partition", p.Index, "err", err)
		return
	}
	m.removeDir(trash)
}

// removeDir removes a deleted log's directory in the background.
func (m *Manager) removeDir(dir string) {
	m.removing.Go(func() {
		if err := os.RemoveAll(dir); err != nil {
			m.log.Error("remove deleted partition directory", "dir", dir, "err", err)
		}
	})
}

// Close closes every log cleanly (flush and clean-shutdown marker).
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for k, p := range m.parts {
		p.wake()
		if err := p.checkpointHW(); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint high watermark of %s-%d: %w", k.Topic, k.Partition, err))
		}
		if err := p.log.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s-%d: %w", k.Topic, k.Partition, err))
		}
	}
	m.parts = map[Key]*Partition{}
	m.removing.Wait()
	return errors.Join(errs...)
}

// RemoveStray deletes partition directories that metadata no longer
// assigns here (a topic deleted, or a partition moved, while this broker
// was down). Only directories holding a partition.metadata file, which
// this package writes, are touched.
func (m *Manager) RemoveStray() error {
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return fmt.Errorf("list log dir %s: %w", m.dir, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if strings.HasSuffix(e.Name(), local.DeletedSuffix) {
			// Moved aside by a deletion that a stop or crash interrupted.
			m.removeDir(filepath.Join(m.dir, e.Name()))
			continue
		}
		i := strings.LastIndexByte(e.Name(), '-')
		if i <= 0 {
			continue
		}
		idx, err := strconv.ParseInt(e.Name()[i+1:], 10, 32)
		if err != nil {
			continue
		}
		dir := filepath.Join(m.dir, e.Name())
		if _, err := os.Stat(filepath.Join(dir, metaFile)); err != nil {
			continue
		}
		if _, ok := m.parts[Key{e.Name()[:i], int32(idx)}]; ok {
			continue
		}
		m.log.Info("removing stray partition directory", "dir", dir)
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove stray %s: %w", dir, err))
		}
	}
	return errors.Join(errs...)
}
