package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestCompactedSmallSegmentsReadFromStart: a producer that is not
// idempotent writes, on a compacted topic with small segments, long-lived
// records each filling a segment, and between them segments of small
// batches of a few keys overwritten again and again, which end up wholly
// superseded (the keys' last values come at the end, some as
// tombstones). Once the cleaner has cleaned everything below the filler
// written last, the log holds no empty batch, and kcat and franz-go
// reading from the beginning both get every surviving key with its latest
// value. The shape matters to librdkafka: a fetch answer holding batches
// but no record (a superseded run cleaned down to an empty batch) makes
// it double its fetch size, and after ten such answers it stops with
// "Message at offset … might be too large to fetch".
func TestCompactedSmallSegmentsReadFromStart(t *testing.T) {
	b := harness.Start(t, fastCleanup)
	adm := b.Admin()
	const topic, runs, churnKeys = "compacted-small", 24, 8
	id := harness.CreateTopic(t, adm, topic, 1, map[string]string{
		"cleanup.policy":            "compact",
		"segment.bytes":             "1024",
		"min.cleanable.dirty.ratio": "0.01",
		"delete.retention.ms":       "0",
	})
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	latest := map[string]*kgo.Record{} // key → last acked record (nil value: deleted)
	produce := func(recs ...*kgo.Record) {
		t.Helper()
		produceSync(t, cl, recs...)
		for _, r := range recs {
			latest[string(r.Key)] = r
		}
	}
	for run := range runs {
		produce(&kgo.Record{Key: fmt.Appendf(nil, "long-%02d", run), Value: fmt.Appendf(nil, "%02d%s", run, strings.Repeat("l", 900))})
		// About a segment of two-record batches of the churn keys.
		for i := range 14 {
			produce(&kgo.Record{Key: fmt.Appendf(nil, "churn-%d", (2*i)%churnKeys), Value: fmt.Appendf(nil, "v-%d-%d-a", run, i)},
				&kgo.Record{Key: fmt.Appendf(nil, "churn-%d", (2*i+1)%churnKeys), Value: fmt.Appendf(nil, "v-%d-%d-b", run, i)})
		}
	}
	for k := range churnKeys {
		r := &kgo.Record{Key: fmt.Appendf(nil, "churn-%d", k), Value: fmt.Appendf(nil, "final-%d", k)}
		if k%4 == 0 {
			r.Value = nil
		}
		produce(r)
	}
	cleanEnd := endOffset(t, adm, topic, 0)
	// Filler with keys of its own, enough to roll several segments past
	// cleanEnd, so that everything below it is cleanable.
	for i := range 30 {
		produce(&kgo.Record{Key: fmt.Appendf(nil, "filler-%02d", i), Value: []byte(strings.Repeat("f", 100))})
	}
	end := endOffset(t, adm, topic, 0)

	var got []*kgo.Record
	waitFor(t, "the cleaner to leave only the latest live record of each key below the filler", func() bool {
		got = harness.ReadAll(t, b.Addr(), topic)[0]
		for _, r := range got {
			if r.Offset >= cleanEnd {
				break
			}
			if r.Value == nil || latest[string(r.Key)].Offset != r.Offset {
				return false
			}
		}
		return true
	})
	batches, empty := scanBatches(t, adm, cl, topic, id, end)
	t.Logf("%d records, %d batches, %d empty; log end %d", len(got), batches, empty, end)
	if empty != 0 {
		t.Fatalf("%d of %d batches are empty", empty, batches)
	}
	check := func(who string, recs []*kgo.Record) {
		t.Helper()
		state := map[string]*kgo.Record{}
		for i, r := range recs {
			if i > 0 && r.Offset <= recs[i-1].Offset {
				t.Fatalf("%s: offset %d after %d", who, r.Offset, recs[i-1].Offset)
			}
			state[string(r.Key)] = r
		}
		for k, want := range latest {
			r, ok := state[k]
			switch {
			case want.Value == nil && ok:
				t.Fatalf("%s: deleted key %s has a record at %d", who, k, r.Offset)
			case want.Value == nil:
			case !ok:
				t.Fatalf("%s: live key %s missing (read %d records)", who, k, len(recs))
			case string(r.Value) != string(want.Value) || r.Offset != want.Offset:
				t.Fatalf("%s: key %s is %q at %d, want %q at %d", who, k, r.Value, r.Offset, want.Value, want.Offset)
			}
		}
	}
	check("franz-go", got)

	viaKcat := kcatRecords(t, b.Addr(), topic)
	if len(viaKcat) != len(got) {
		t.Fatalf("kcat read %d records, franz-go %d", len(viaKcat), len(got))
	}
	check("kcat", viaKcat)
}

// scanBatches fetches partition 0 of topic from its log start to end with
// raw Fetch requests and counts the batches, and those without records.
// Every answer below end must hold at least one whole batch.
func scanBatches(t *testing.T, adm *kadm.Client, cl *kgo.Client, topic string, id kadm.TopicID, end int64) (batches, empty int) {
	t.Helper()
	for off := startOffset(t, adm, topic, 0); off < end; {
		p, err := fetchRaw(testCtx(t), cl, topic, id, 0, off, 0)
		if err != nil {
			t.Fatal(err)
		}
		if p.ErrorCode != 0 {
			t.Fatalf("fetch at %d: error code %d", off, p.ErrorCode)
		}
		bs := decodeBatches(t, p.RecordBatches)
		if len(bs) == 0 {
			t.Fatalf("fetch at %d below the log end %d: %d bytes, no whole batch", off, end, len(p.RecordBatches))
		}
		for _, bt := range bs {
			batches++
			if bt.NumRecords == 0 {
				empty++
			}
			off = bt.FirstOffset + int64(bt.LastOffsetDelta) + 1
		}
	}
	return batches, empty
}
