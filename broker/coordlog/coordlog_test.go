package coordlog_test

import (
	"errors"
	"testing"
	"time"

	"github.com/strata-broker/strata/broker/coordlog"
	"github.com/strata-broker/strata/broker/coordlog/coordlogtest"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/record"
)

// TestAppendNeedsMinISR: a coordinator's append, acks=all, is refused
// while the ISR is below the topic's min.insync.replicas, and nothing is
// written; it succeeds once the minimum is met.
func TestAppendNeedsMinISR(t *testing.T) {
	in := coordlogtest.NewInternal(t, "__transaction_state")
	setMinISR := func(rev int64, v string) {
		t.Helper()
		topic, _ := in.Cache.Topic("__transaction_state")
		in.Cache.Apply(rev, []metadata.Change{{Kind: metadata.ChangeTopic, Topic: "__transaction_state", ID: topic.ID,
			Configs: map[string]string{"min.insync.replicas": v}}})
		if err := in.Parts.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	setMinISR(2, "2")
	p := &coordlog.Partition{Topic: "__transaction_state", Index: 0, Epoch: 1, Log: in.Partition(), Timeout: time.Second}
	recs := []record.Record{{Key: []byte("k"), Value: []byte("v")}}
	if err := p.Append(recs, time.Now()); !errors.Is(err, coordlog.ErrNotCommitted) {
		t.Fatalf("append with 1 in-sync replica of min 2: %v, want ErrNotCommitted", err)
	}
	if end := in.Partition().HighWatermark(); end != 0 {
		t.Fatalf("refused append wrote: high watermark %d", end)
	}
	setMinISR(3, "1")
	if err := p.Append(recs, time.Now()); err != nil {
		t.Fatalf("append with min.insync.replicas met: %v", err)
	}
}
