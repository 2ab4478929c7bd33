package replica

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata"
)

// Fetcher runs one fetch loop per leader this broker follows partitions of.
type Fetcher struct {
	nodeID  int32
	cache   *metadata.Cache
	log     *slog.Logger
	ctx     context.Context
	maxWait time.Duration // replica.fetch.wait.max.ms

	mu    sync.Mutex
	loops map[int32]*loop
	wg    sync.WaitGroup
}

// New returns a fetcher whose loops stop when ctx is done; a fetch waits
// at most maxWait at the leader for data (replica.fetch.wait.max.ms).
func New(ctx context.Context, nodeID int32, cache *metadata.Cache, maxWait time.Duration, log *slog.Logger) *Fetcher {
	return &Fetcher{nodeID: nodeID, cache: cache, maxWait: maxWait, log: log.With("component", "replica-fetcher"), ctx: ctx, loops: map[int32]*loop{}}
}

// Follow sets the partitions to replicate: each goes to the loop of its
// current leader; loops left without partitions stop.
func (f *Fetcher) Follow(parts []*partition.Partition) {
	byLeader := map[int32][]*partition.Partition{}
	for _, p := range parts {
		if l := p.Leader(); l >= 0 && l != f.nodeID {
			byLeader[l] = append(byLeader[l], p)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, l := range f.loops {
		if _, ok := byLeader[id]; !ok {
			l.cancel()
			delete(f.loops, id)
		}
	}
	for id, ps := range byLeader {
		l, ok := f.loops[id]
		if !ok {
			if f.ctx.Err() != nil {
				return
			}
			l = newLoop(f, id)
			f.loops[id] = l
			f.wg.Go(l.run)
		}
		l.set(ps)
	}
}

// Close stops every loop and waits for them.
func (f *Fetcher) Close() error {
	f.mu.Lock()
	for id, l := range f.loops {
		l.cancel()
		delete(f.loops, id)
	}
	f.mu.Unlock()
	f.wg.Wait()
	return nil
}
