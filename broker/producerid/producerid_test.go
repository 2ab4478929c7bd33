package producerid

import (
	"context"
	"sync"
	"testing"

	"github.com/strata-broker/strata/metadata/memstore"
)

// TestNextUniqueAcrossBlocksAndAllocators: two allocators over one store
// (two brokers) hand out distinct ids, concurrently and across blocks.
func TestNextUniqueAcrossBlocksAndAllocators(t *testing.T) {
	store := memstore.New()
	as := []*Allocator{New(store), New(store)}
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range Block {
				id, err := as[i%2].Next(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[id] {
					t.Errorf("id %d handed out twice", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 4*Block {
		t.Fatalf("%d ids, want %d", len(seen), 4*Block)
	}
}
