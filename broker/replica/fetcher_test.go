package replica

import (
	"context"
	"log/slog"
	"testing"

	"github.com/strata-broker/strata/broker/partition"
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
