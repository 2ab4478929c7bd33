package replica

import (
	"context"
	"github.com/strata-broker/strata/broker/peer"
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
	// Transport reaches leaders on the inter-broker listener (zero:
	// their registered Host and Port, plaintext).
	Transport peer.Transport
	Log       *slog.Logger
}

// Fetcher runs num.replica.fetchers fetch loops per leader this broker
// follows partitions of.
type Fetcher struct {
	opts Options
	log  *slog.Logger
	ctx  context.Context

	// followMu serialises Follow and SetFetchers, so that a partition is
	// never in the loops of two fetcher counts at once.
	followMu  sync.Mutex
	following []*partition.Partition // the last set Follow was given; guarded by followMu

	mu    sync.Mutex
	loops map[loopKey]*loop // guarded by mu, as is opts.Fetchers
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
// partition always goes to the same one while the count stays (Kafka
// hashes topic and partition likewise). f.mu must be held.
func (f *Fetcher) fetcherOf(p *partition.Partition) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(p.Topic))
	return int32((uint64(h.Sum32())*31 + uint64(uint32(p.Index))) % uint64(f.opts.Fetchers))
}

// Follow sets the partitions to replicate: each goes to its fetcher's loop
// for its current leader; loops left without partitions stop.
func (f *Fetcher) Follow(parts []*partition.Partition) {
	f.followMu.Lock()
	defer f.followMu.Unlock()
	f.following = parts
	f.follow(parts)
}

// SetFetchers changes num.replica.fetchers at run time: the loops stop,
// and once they all ended the partitions are spread over the new count
// of loops per leader, each resuming from its log's end (a loop's state
// is only its connection and what it learnt of the leader epochs).
func (f *Fetcher) SetFetchers(n int32) {
	n = max(n, 1)
	f.followMu.Lock()
	defer f.followMu.Unlock()
	f.mu.Lock()
	if n == f.opts.Fetchers {
		f.mu.Unlock()
		return
	}
	old := f.loops
	f.loops = map[loopKey]*loop{}
	f.log.Info("num.replica.fetchers changed; re-spreading the followed partitions", "from", f.opts.Fetchers, "to", n)
	f.opts.Fetchers = n
	f.mu.Unlock()
	for _, l := range old {
		l.cancel()
	}
	for _, l := range old {
		<-l.done
	}
	f.follow(f.following)
}

// Fetchers is the current number of fetch loops per leader.
func (f *Fetcher) Fetchers() int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opts.Fetchers
}

// follow hands parts to the loops. f.followMu must be held.
func (f *Fetcher) follow(parts []*partition.Partition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	byLoop := map[loopKey][]*partition.Partition{}
	for _, p := range parts {
		if l := p.Leader(); l >= 0 && l != f.opts.NodeID {
			k := loopKey{l, f.fetcherOf(p)}
			byLoop[k] = append(byLoop[k], p)
		}
	}
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
			f.wg.Go(func() {
				defer close(l.done)
				l.run()
			})
		}
		l.set(ps)
	}
}

// Close stops every loop and waits for them.
func (f *Fetcher) Close() error {
	f.followMu.Lock() // not while SetFetchers moves partitions
	defer f.followMu.Unlock()
	f.mu.Lock()
	for k, l := range f.loops {
		l.cancel()
		delete(f.loops, k)
	}
	f.mu.Unlock()
	f.wg.Wait()
	return nil
}
