package e2e

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestReadCommittedWithoutTransactions: without transactions the last
// stable offset is the high watermark, so a read_committed consumer
// (franz-go) reads every record a read_uncommitted one does, and
// read_committed end offsets (kadm's ListCommittedOffsets) are the high
// watermarks.
func TestReadCommittedWithoutTransactions(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	const topic, n = "rc", 50
	harness.CreateTopic(t, adm, topic, 1, nil)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte{byte(i)}}
	}
	produceSync(t, b.Client(), recs...)

	ends, err := adm.ListCommittedOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := ends.Lookup(topic, 0); !ok || o.Err != nil || o.Offset != n || o.Offset != endOffset(t, adm, topic, 0) {
		t.Fatalf("read_committed end offset %+v (found %v), want %d, the high watermark", o, ok, n)
	}

	cl := b.Client(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testCtx(t)
	var got []*kgo.Record
	for len(got) < n && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, e := range fs.Errors() {
			if ctx.Err() == nil {
				t.Fatalf("poll: %v", e.Err)
			}
		}
		got = append(got, fs.Records()...)
	}
	if len(got) != n {
		t.Fatalf("read_committed consumer read %d records, want %d", len(got), n)
	}
	for i, r := range got {
		if r.Offset != int64(i) || len(r.Value) != 1 || r.Value[0] != byte(i) {
			t.Fatalf("record %d: offset %d value %v", i, r.Offset, r.Value)
		}
	}
}
