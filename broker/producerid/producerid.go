// Package producerid hands out producer ids to InitProducerId: to
// idempotent producers (broker/handler) and to the transaction
// coordinator (broker/txn), from blocks reserved through the metadata's
// ProducerIDs role, so that ids stay unique across restarts and brokers.
//
// Concurrency: an Allocator is safe for concurrent use; one mutex guards
// its current block, held across the reservation of a new one.
package producerid

import (
	"context"
	"fmt"
	"sync"

	"github.com/strata-broker/strata/metadata"
)

// Block is how many producer ids one reservation takes.
const Block = 1000

// Allocator hands out the ids of the block it last reserved.
type Allocator struct {
	store metadata.ProducerIDs

	mu        sync.Mutex
	next, end int64
}

// New returns an allocator reserving its blocks from store.
func New(store metadata.ProducerIDs) *Allocator { return &Allocator{store: store} }

// Next returns a producer id never handed out before, reserving a new
// block when the current one is used up.
func (a *Allocator) Next(ctx context.Context) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next >= a.end {
		first, err := a.store.AllocateProducerIDs(ctx, Block)
		if err != nil {
			return 0, fmt.Errorf("reserve producer id block: %w", err)
		}
		a.next, a.end = first, first+Block
	}
	id := a.next
	a.next++
	return id, nil
}
