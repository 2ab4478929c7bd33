package replica

import (
	"context"
	"hash/fnv"
	"log/slog"
	"sync"
	"time"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata"
)

// Options configure a Fetcher; zero sizes and counts take Kafka's
// defaults.
type Options struct {
	NodeID            int32
	Cache             *metadata.Cache
	MaxWait           time.Duration // replica.fetch.wait.max.ms
	PartitionMaxBytes int32         // replica.fetch.max.bytes (1 MiB)
	ResponseMaxBytes  int32         // replica.fetch.response.max.bytes (10 MiB)
	Fetchers          int32         // num.replica.fetchers (1)
	Log               *slog.Logger
}

// Fetcher runs num.replica.fetchers fetch loops per leader this broker
// follows partitions of.
type Fetcher struct {
	opts Options
	log  *slog.Logger
	ctx  context.Context

	mu    sync.Mutex
	loops map[loopKey]*loop
	wg    sync.WaitGroup
}

// loopKey names a loop: the leader it fetches from and which of that
// leader's fetchers it is.
type loopKey struct{ leader, fetcher int32 }

// New returns a fetcher whose loops stop when ctx is done.
func New(ctx context.Context, opts Options) *Fetcher {
	if opts.PartitionMaxBytes <= 0 {
		opts.PartitionMaxBytes = 1 << 20
	}
	if opts.ResponseMaxBytes <= 0 {
		opts.ResponseMaxBytes = 10 << 20
	}
	opts.Fetchers = max(opts.Fetchers, 1)
	return &Fetcher{opts: opts, log: opts.Log.With("component", "replica-fetcher"), ctx: ctx, loops: map[loopKey]*loop{}}
}

// fetcherOf is the fetcher of its leader that replicates p: the same
// partition always goes to the same one (Kafka hashes topic and partition
// likewise).
func (f *Fetcher) fetcherOf(p *partition.Partition) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(p.Topic))
	return int32((uint64(h.Sum32())*31 + uint64(uint32(p.Index))) % uint64(f.opts.Fetchers))
}

// Follow sets the partitions to replicate: each goes to its fetcher's loop
// for its current leader; loops left without partitions stop.
func (f *Fetcher) Follow(parts []*partition.Partition) {
	byLoop := map[loopKey][]*partition.Partition{}
	for _, p := range parts {
		if l := p.Leader(); l >= 0 && l != f.opts.NodeID {
			k := loopKey{l, f.fetcherOf(p)}
			byLoop[k] = append(byLoop[k], p)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, l := range f.loops {
		if _, ok := byLoop[k]; !ok {
			l.cancel()
			delete(f.loops, k)
		}
	}
	for k, ps := range byLoop {
		l, ok := f.loops[k]
		if !ok {
			if f.ctx.Err() != nil {
				return
			}
			l = newLoop(f, k)
			f.loops[k] = l
			f.wg.Go(l.run)
		}
		l.set(ps)
	}
}

// Close stops every loop and waits for them.
func (f *Fetcher) Close() error {
	f.mu.Lock()
	for k, l := range f.loops {
		l.cancel()
		delete(f.loops, k)
	}
	f.mu.Unlock()
	f.wg.Wait()
	return nil
}
