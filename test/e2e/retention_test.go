package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// fastCleanup makes retention and the cleaner run every few tens of
// milliseconds, so tests wait on conditions rather than on minutes.
var fastCleanup = map[string]string{
	"log.retention.check.interval.ms": "50",
	"log.cleaner.backoff.ms":          "50",
	"log.cleaner.dedupe.buffer.size":  strconv.Itoa(8 << 20),
}

// waitFor polls cond every 50 ms until it holds, failing after 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startOffset is the log start offset of topic/partition (ListOffsets
// earliest).
func startOffset(t *testing.T, adm *kadm.Client, topic string, p int32) int64 {
	t.Helper()
	starts, err := adm.ListStartOffsets(testCtx(t), topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		t.Fatalf("list start offsets %s: %v", topic, err)
	}
	o, _ := starts.Lookup(topic, p)
	return o.Offset
}

// TestCompactedTopicReadByFranzGoAndKcat produces keyed updates and
// tombstones (snappy-compressed, idempotent) to a compacted topic, waits
// for the cleaner to shrink it, and reads it from the start with franz-go
// and kcat: both see every live key's latest value at the offset it was
// acked at, deleted keys gone, offsets increasing with gaps.
func TestCompactedTopicReadByFranzGoAndKcat(t *testing.T) {
	b := harness.Start(t, fastCleanup)
	adm := b.Admin()
	const topic, keys, updates = "compacted", 50, 2000
	harness.CreateTopic(t, adm, topic, 1, map[string]string{
		"cleanup.policy":            "compact",
		"segment.bytes":             "4096",
		"min.cleanable.dirty.ratio": "0.01",
		"delete.retention.ms":       "0",
	})
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.SnappyCompression()))
	latest := map[string]*kgo.Record{} // key → last acked record (nil value: deleted)
	for i := 0; i < updates; i += 20 {
		var recs []*kgo.Record
		for j := i; j < i+20; j++ {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "key-%02d", j%keys), Value: fmt.Appendf(nil, "value-%d", j)})
		}
		produceSync(t, cl, recs...)
		for _, r := range recs {
			latest[string(r.Key)] = r
		}
	}
	var tombs []*kgo.Record
	for k := range 5 {
		tombs = append(tombs, &kgo.Record{Key: fmt.Appendf(nil, "key-%02d", k)})
	}
	produceSync(t, cl, tombs...)
	for _, r := range tombs {
		latest[string(r.Key)] = r
	}
	// Enough filler to seal the segment holding the tombstones.
	for i := range 5 {
		var recs []*kgo.Record
		for j := range 20 {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "filler-%d-%d", i, j), Value: make([]byte, 100)})
		}
		produceSync(t, cl, recs...)
		for _, r := range recs {
			latest[string(r.Key)] = r
		}
	}
	end := endOffset(t, adm, topic, 0)

	var got []*kgo.Record
	waitFor(t, "the cleaner to compact the topic", func() bool {
		got = harness.ReadAll(t, b.Addr(), topic)[0]
		return len(got) < updates/4
	})
	check := func(who string, offsets []int64, keysOf []string, values []*string) {
		t.Helper()
		state := map[string]int{}
		for i := range offsets {
			if i > 0 && offsets[i] <= offsets[i-1] {
				t.Fatalf("%s: offset %d after %d", who, offsets[i], offsets[i-1])
			}
			state[keysOf[i]] = i
		}
		for k, want := range latest {
			i, ok := state[k]
			switch {
			case want.Value == nil && ok && values[i] != nil:
				t.Fatalf("%s: deleted key %s has value %q at %d", who, k, *values[i], offsets[i])
			case want.Value == nil:
			case !ok:
				t.Fatalf("%s: live key %s missing", who, k)
			case values[i] == nil || *values[i] != string(want.Value) || offsets[i] != want.Offset:
				t.Fatalf("%s: key %s ends at offset %d, want %q at %d", who, k, offsets[i], want.Value, want.Offset)
			}
		}
	}
	columns := func(recs []*kgo.Record) (offs []int64, ks []string, vs []*string) {
		for _, r := range recs {
			offs, ks = append(offs, r.Offset), append(ks, string(r.Key))
			if r.Value == nil {
				vs = append(vs, nil)
			} else {
				v := string(r.Value)
				vs = append(vs, &v)
			}
		}
		return offs, ks, vs
	}
	offs, ks, vs := columns(got)
	check("franz-go", offs, ks, vs)
	if offs[len(offs)-1] != end-1 {
		t.Fatalf("franz-go: last offset %d, end %d", offs[len(offs)-1], end)
	}

	offs, ks, vs = columns(kcatRecords(t, b.Addr(), topic))
	if len(offs) > len(got) {
		t.Fatalf("kcat read %d records, franz-go %d (the log only shrinks)", len(offs), len(got))
	}
	check("kcat", offs, ks, vs)
}

// TestRetentionByTimeSizeAndDeleteRecords: records stamped hours ago stay
// while retention.ms is -1; an IncrementalAlterConfigs to one hour takes
// effect without a restart (segments of older records go, the log start
// moves, earliest offsets and fetches follow it); DeleteRecords moves it
// on demand; retention.bytes trims the rest but never the active segment.
func TestRetentionByTimeSizeAndDeleteRecords(t *testing.T) {
	b := harness.Start(t, fastCleanup)
	adm := b.Admin()
	const topic = "retained"
	id := harness.CreateTopic(t, adm, topic, 1, map[string]string{"segment.bytes": "2048", "retention.ms": "-1"})
	cl := b.Client(kgo.DefaultProduceTopic(topic))
	// 150 records stamped three hours ago, 150 half an hour ago.
	for i := 0; i < 300; i += 10 {
		age := 3 * time.Hour
		if i >= 150 {
			age = 30 * time.Minute
		}
		var recs []*kgo.Record
		for j := i; j < i+10; j++ {
			recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "old-%d-%s", j, strings.Repeat("x", 50)), Timestamp: time.Now().Add(-age)})
		}
		produceSync(t, cl, recs...)
	}
	produceSync(t, cl, &kgo.Record{Value: []byte("recent")})
	end := endOffset(t, adm, topic, 0)
	if s := startOffset(t, adm, topic, 0); s != 0 {
		t.Fatalf("log start %d with retention.ms=-1", s)
	}

	alter := func(key, value string) {
		t.Helper()
		resps, err := adm.AlterTopicConfigs(testCtx(t), []kadm.AlterConfig{{Name: key, Value: kadm.StringPtr(value)}}, topic)
		if err == nil {
			_, err = resps.On(topic, nil)
		}
		if err != nil {
			t.Fatalf("alter %s=%s: %v", key, value, err)
		}
	}
	alter("retention.ms", "3600000")
	var start int64
	waitFor(t, "time retention to move the log start", func() bool {
		start = startOffset(t, adm, topic, 0)
		return start > 0
	})
	if start > 150 || start < 100 {
		t.Fatalf("log start %d: records of three hours ago should go, those of half an hour ago stay", start)
	}
	p, err := fetchRaw(testCtx(t), cl, topic, id, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(p.ErrorCode); err != kerr.OffsetOutOfRange {
		t.Fatalf("fetch below the log start: %v", err)
	}
	if got := harness.ReadAll(t, b.Addr(), topic)[0]; len(got) == 0 || got[0].Offset != start {
		t.Fatalf("reading from the start: %d records, first at %v, want %d", len(got), got, start)
	}

	// DeleteRecords moves the start on demand, inside a segment.
	var to kadm.Offsets
	to.Add(kadm.Offset{Topic: topic, Partition: 0, At: start + 3})
	dr, err := adm.DeleteRecords(testCtx(t), to)
	if err == nil {
		err = dr.Error()
	}
	if err != nil {
		t.Fatalf("delete records: %v", err)
	}
	if s := startOffset(t, adm, topic, 0); s != start+3 {
		t.Fatalf("log start %d after DeleteRecords to %d", s, start+3)
	}

	// retention.bytes of 1 leaves only the active segment.
	alter("retention.bytes", "1")
	waitFor(t, "size retention to leave only the active segment", func() bool {
		segs, err := filepath.Glob(filepath.Join(b.Dir(), topic+"-0", "*.log"))
		return err == nil && len(segs) == 1
	})
	if s := startOffset(t, adm, topic, 0); s <= start+3 || s >= end {
		t.Fatalf("log start %d after size retention (was %d, end %d)", s, start+3, end)
	}
	if got := harness.ReadAll(t, b.Addr(), topic)[0]; len(got) == 0 || got[len(got)-1].Offset != end-1 {
		t.Fatalf("after size retention: %d records", len(got))
	}
}
