package metadatatest

import (
	"errors"
	"maps"
	"testing"

	"github.com/strata-broker/strata/metadata"
)

// testBrokerConfigs: the cluster default and per-broker dynamic configs
// are replaced whole, removed by an empty set, copied on the way in, seen
// by every handle's cache (also one opened later), and a negative id
// other than ClusterDefault is refused.
func testBrokerConfigs(t *testing.T, cl Cluster) {
	s, o := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	def := map[string]string{"log.retention.ms": "5000", "message.max.bytes": "2000000"}
	rev, err := s.SetBrokerConfigs(ctx, metadata.ClusterDefault, def)
	if err != nil {
		t.Fatalf("set cluster default: %v", err)
	}
	if got := s.Cache().BrokerConfigs(metadata.ClusterDefault); !maps.Equal(got, def) {
		t.Fatalf("cluster default cached as %v, want %v", got, def)
	}
	def["log.retention.ms"] = "1" // the store kept its own copy
	if got := s.Cache().BrokerConfigs(metadata.ClusterDefault); got["log.retention.ms"] != "5000" {
		t.Fatalf("caller's change leaked into the store: %v", got)
	}
	rev2, err := s.SetBrokerConfigs(ctx, 2, map[string]string{"num.replica.fetchers": "3"})
	if err != nil {
		t.Fatalf("set broker 2: %v", err)
	}
	if rev2 <= rev {
		t.Fatalf("revision %d after %d", rev2, rev)
	}
	if err := o.Cache().WaitRevision(ctx, rev2); err != nil {
		t.Fatal(err)
	}
	if got := o.Cache().BrokerConfigs(2); got["num.replica.fetchers"] != "3" || len(got) != 1 {
		t.Fatalf("other handle sees broker 2's configs as %v", got)
	}
	if got := o.Cache().BrokerConfigs(1); got != nil {
		t.Fatalf("broker 1 has configs %v", got)
	}

	// Replaced whole.
	if _, err := s.SetBrokerConfigs(ctx, metadata.ClusterDefault, map[string]string{"log.segment.bytes": "1048576"}); err != nil {
		t.Fatal(err)
	}
	if got := s.Cache().BrokerConfigs(metadata.ClusterDefault); !maps.Equal(got, map[string]string{"log.segment.bytes": "1048576"}) {
		t.Fatalf("cluster default after replacing: %v", got)
	}
	// A handle opened now loads them.
	late := cl.Open(t)
	if got := late.Cache().BrokerConfigs(2); got["num.replica.fetchers"] != "3" {
		t.Fatalf("a new handle loaded broker 2's configs as %v", got)
	}
	if got := late.Cache().BrokerConfigs(metadata.ClusterDefault); got["log.segment.bytes"] != "1048576" {
		t.Fatalf("a new handle loaded the cluster default as %v", got)
	}

	// Removed by an empty set, also when there is nothing to remove.
	for _, id := range []int32{2, 2, 7} {
		if _, err := s.SetBrokerConfigs(ctx, id, nil); err != nil {
			t.Fatalf("clear broker %d: %v", id, err)
		}
	}
	rev3, err := s.SetBrokerConfigs(ctx, metadata.ClusterDefault, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Cache().WaitRevision(ctx, rev3); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*metadata.Cache{s.Cache(), o.Cache()} {
		if c.BrokerConfigs(2) != nil || c.BrokerConfigs(metadata.ClusterDefault) != nil {
			t.Fatalf("configs left after clearing: %v, %v", c.BrokerConfigs(2), c.BrokerConfigs(metadata.ClusterDefault))
		}
	}

	if _, err := s.SetBrokerConfigs(ctx, -2, map[string]string{"a": "b"}); !errors.Is(err, metadata.ErrInvalidBrokerID) {
		t.Fatalf("set broker -2: %v, want ErrInvalidBrokerID", err)
	}
}
