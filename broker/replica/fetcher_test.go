package replica

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata"
)

func TestFetcherOfSpreadsPartitions(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	one := New(context.Background(), Options{Log: quiet})
	two := New(context.Background(), Options{Fetchers: 2, Log: quiet})
	if one.opts.PartitionMaxBytes != 1<<20 || one.opts.ResponseMaxBytes != 10<<20 || one.opts.Fetchers != 1 {
		t.Fatalf("defaults: %+v", one.opts)
	}
	used := map[int32]int{}
	for i := range int32(6) {
		p := &partition.Partition{Topic: "t", Index: i}
		if got := one.fetcherOf(p); got != 0 {
			t.Fatalf("one fetcher: partition %d went to %d", i, got)
		}
		id := two.fetcherOf(p)
		if id != two.fetcherOf(&partition.Partition{Topic: "t", Index: i}) {
			t.Fatalf("partition %d moves between fetchers", i)
		}
		used[id]++
	}
	if used[0] != 3 || used[1] != 3 {
		t.Fatalf("six partitions over two fetchers: %v", used)
	}
}

// TestSetFetchers: changing num.replica.fetchers at run time stops the
// loops and spreads the followed partitions over the new count.
func TestSetFetchers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := New(ctx, Options{NodeID: 9, Cache: metadata.NewCache(), Log: slog.New(slog.DiscardHandler)})
	defer f.Close()
	var parts []*partition.Partition
	for i := range int32(6) {
		parts = append(parts, &partition.Partition{Topic: "t", Index: i}) // led by broker 0, which is not registered
	}
	f.Follow(parts)
	spread := func() []int {
		f.mu.Lock()
		defer f.mu.Unlock()
		out := make([]int, f.opts.Fetchers)
		for k, l := range f.loops {
			if k.leader != 0 {
				t.Fatalf("loop for leader %d", k.leader)
			}
			out[k.fetcher] = len(l.snapshot())
		}
		return out
	}
	if got := spread(); !slices.Equal(got, []int{6}) {
		t.Fatalf("one fetcher: %v", got)
	}
	f.mu.Lock()
	first := f.loops[loopKey{0, 0}]
	f.mu.Unlock()
	f.SetFetchers(2)
	if got := spread(); !slices.Equal(got, []int{3, 3}) || f.Fetchers() != 2 {
		t.Fatalf("two fetchers: %v", got)
	}
	if !metadata.IsClosed(first.done) {
		t.Fatal("the old loop still runs")
	}
	f.SetFetchers(0) // at least one
	if got := spread(); !slices.Equal(got, []int{6}) {
		t.Fatalf("back to one fetcher: %v", got)
	}
}
