package metadatatest

import (
	"errors"
	"maps"
	"testing"

	"github.com/strata-broker/strata/metadata"
)

// testClientQuotas: every entity shape Kafka allows, defaults included,
// is stored, replaced whole, removed by an empty set and seen by every
// handle's cache (also one opened later); names with a slash, spaces or
// a "<" round-trip and stay apart from the default; invalid shapes fail.
func testClientQuotas(t *testing.T, cl Cluster) {
	s, o := cl.Open(t), cl.Open(t)
	ctx := testCtx(t)
	d := metadata.QuotaDefault
	entities := []metadata.QuotaEntity{
		{User: "team/alice smith"},
		{User: "team/alice smith", ClientID: "app 1"},
		{User: "alice", ClientID: d},
		{User: d},
		{User: d, ClientID: "app"},
		{User: d, ClientID: d},
		{ClientID: "<x>"},
		{ClientID: d},
		{IP: "127.0.0.1"},
		{IP: d},
	}
	var rev int64
	for i, e := range entities {
		var err error
		rev, err = s.SetClientQuotas(ctx, e, map[string]float64{"producer_byte_rate": float64(1000 + i), "request_percentage": 12.5})
		if err != nil {
			t.Fatalf("set %v: %v", e, err)
		}
	}
	if err := o.Cache().WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	for i, e := range entities {
		got := o.Cache().ClientQuota(e)
		if got["producer_byte_rate"] != float64(1000+i) || got["request_percentage"] != 12.5 || len(got) != 2 {
			t.Fatalf("other handle sees %v for %+v", got, e)
		}
	}
	if got := o.Cache().ClientQuota(metadata.QuotaEntity{User: "alice"}); got != nil {
		t.Fatalf("an entity never set has %v", got)
	}
	// Replaced whole.
	if _, err := s.SetClientQuotas(ctx, entities[0], map[string]float64{"consumer_byte_rate": 5}); err != nil {
		t.Fatal(err)
	}
	if got := s.Cache().ClientQuota(entities[0]); !maps.Equal(got, map[string]float64{"consumer_byte_rate": 5}) {
		t.Fatalf("after replacing: %v", got)
	}
	late := cl.Open(t)
	if got := late.Cache().ClientQuotas(); len(got) != len(entities) || got[entities[0]]["consumer_byte_rate"] != 5 {
		t.Fatalf("a new handle loaded %v", got)
	}
	for _, e := range entities {
		var err error
		if rev, err = s.SetClientQuotas(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*metadata.Cache{s.Cache(), o.Cache(), late.Cache()} {
		if err := c.WaitRevision(ctx, rev); err != nil {
			t.Fatal(err)
		}
		if got := c.ClientQuotas(); len(got) != 0 {
			t.Fatalf("entities left after removing: %v", got)
		}
	}
	for _, e := range []metadata.QuotaEntity{{}, {User: "a", IP: "1.2.3.4"}, {ClientID: "c", IP: d}} {
		if _, err := s.SetClientQuotas(ctx, e, map[string]float64{"producer_byte_rate": 1}); !errors.Is(err, metadata.ErrInvalidQuotaEntity) {
			t.Fatalf("entity %+v: got %v, want ErrInvalidQuotaEntity", e, err)
		}
	}
}
