package etcdstore

import (
	"slices"
	"sync"
	"testing"
)

// TestProducerIDBlocksAreUnique: two stores (two brokers) allocating
// concurrently get disjoint blocks. Uniqueness across a restart is covered
// by TestEmbeddedRestartKeepsData.
func TestProducerIDBlocksAreUnique(t *testing.T) {
	stores := []*Store{openStore(t), openStore(t)}
	ctx := testCtx(t)
	const perStore, block = 10, 5
	var (
		mu     sync.Mutex
		firsts []int64
		wg     sync.WaitGroup
	)
	for _, s := range stores {
		for range 2 {
			wg.Go(func() {
				for range perStore / 2 {
					first, err := s.AllocateProducerIDs(ctx, block)
					if err != nil {
						t.Errorf("AllocateProducerIDs: %v", err)
						return
					}
					mu.Lock()
					firsts = append(firsts, first)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	slices.Sort(firsts)
	if len(firsts) != len(stores)*perStore {
		t.Fatalf("%d blocks, want %d", len(firsts), len(stores)*perStore)
	}
	for i, f := range firsts {
		if f != int64(i)*block {
			t.Fatalf("blocks %v are not the contiguous disjoint sequence 0,%d,…", firsts, block)
		}
	}
	if _, err := stores[0].AllocateProducerIDs(ctx, 0); err == nil {
		t.Fatal("n=0 accepted")
	}
}
