package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestCompactedTopicRejectsKeylessRecords: a record without a key on a
// cleanup.policy=compact topic is INVALID_RECORD, as Kafka answers, and
// nothing is appended; keyed records go in.
func TestCompactedTopicRejectsKeylessRecords(t *testing.T) {
	b := harness.Start(t, nil)
	harness.CreateTopic(t, b.Admin(), "compact-keys", 1, map[string]string{"cleanup.policy": "compact"})
	cl := b.Client(kgo.DefaultProduceTopic("compact-keys"), kgo.RecordRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record: %v, want INVALID_RECORD", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("keyed record: %v", err)
	}
	if got := harness.ReadAll(t, b.Addr(), "compact-keys")[0]; len(got) != 1 || string(got[0].Key) != "k" {
		t.Fatalf("log holds %d records, want only the keyed one", len(got))
	}
}
