package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// tsOffsets are the timestamps, in seconds after a base, of the ten records
// the ListOffsets tests write; offset 6 holds the maximum, out of order.
var tsOffsets = []int64{0, 1, 2, 3, 4, 5, 100, 7, 8, 9}

// TestTimestampsAndListOffsets writes one record per batch with CreateTime
// timestamps and checks earliest, latest, by-timestamp and max-timestamp
// ListOffsets answers, and that consumed timestamps are the produced ones.
func TestTimestampsAndListOffsets(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	const topic = "timestamps"
	harness.CreateTopic(t, adm, topic, 1, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	cl := b.Client()
	var recs []*kgo.Record
	for i, s := range tsOffsets {
		r := &kgo.Record{Topic: topic, Value: []byte{byte(i)}, Timestamp: base.Add(time.Duration(s) * time.Second)}
		produceSync(t, cl, r) // one batch each
		recs = append(recs, r)
	}
	checkPartition(t, topic, 0, recs, harness.ReadAll(t, b.Addr(), topic)[0])
	checkListOffsets(t, adm, topic, base.UnixMilli())
}

// TestListOffsetsWithinOneBatch is the same lookup when all ten records sit
// in one batch: Kafka answers at record granularity, not the batch's base.
func TestListOffsetsWithinOneBatch(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	const topic = "timestamps-one-batch"
	id := harness.CreateTopic(t, adm, topic, 1, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
	spec := harness.BatchSpec{ProducerID: -1, FirstTs: base}
	for i, s := range tsOffsets {
		spec.Records = append(spec.Records, harness.RawRecord{Value: []byte{byte(i)}, TsDelta: s * 1000})
	}
	if pr := harness.ProduceRaw(t, b.Client(), topic, id, 0, harness.BuildBatch(spec)); pr.ErrorCode != 0 {
		t.Fatalf("produce: error code %d", pr.ErrorCode)
	}
	checkListOffsets(t, adm, topic, base)
}

func checkListOffsets(t *testing.T, adm *kadm.Client, topic string, base int64) {
	t.Helper()
	ctx := testCtx(t)
	lookup := func(what string, l kadm.ListedOffsets, err error) kadm.ListedOffset {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		o, ok := l.Lookup(topic, 0)
		if !ok || o.Err != nil {
			t.Fatalf("%s: found %v, err %v", what, ok, o.Err)
		}
		return o
	}
	l, err := adm.ListStartOffsets(ctx, topic)
	if o := lookup("earliest", l, err); o.Offset != 0 {
		t.Errorf("earliest offset %d, want 0", o.Offset)
	}
	l, err = adm.ListEndOffsets(ctx, topic)
	if o := lookup("latest", l, err); o.Offset != int64(len(tsOffsets)) {
		t.Errorf("latest offset %d, want %d", o.Offset, len(tsOffsets))
	}
	l, err = adm.ListMaxTimestampOffsets(ctx, topic)
	if o := lookup("max timestamp (-3)", l, err); o.Offset != 6 || o.Timestamp != base+100_000 {
		t.Errorf("max timestamp: offset %d ts %d, want offset 6 ts %d", o.Offset, o.Timestamp, base+100_000)
	}
	for _, c := range []struct {
		name         string
		ts           int64
		offset, want int64 // want is the timestamp returned with the offset
	}{
		{"before all", base - 5000, 0, base},
		{"exact", base + 4000, 4, base + 4000},
		{"between", base + 2500, 3, base + 3000},
		{"after 9s only the max", base + 9500, 6, base + 100_000},
		{"at max", base + 100_000, 6, base + 100_000},
	} {
		l, err := adm.ListOffsetsAfterMilli(ctx, c.ts, topic)
		o := lookup("by timestamp "+c.name, l, err)
		if o.Offset != c.offset || o.Timestamp != c.want {
			t.Errorf("by timestamp %s (%d): offset %d ts %d, want offset %d ts %d", c.name, c.ts, o.Offset, o.Timestamp, c.offset, c.want)
		}
	}
	// Past every timestamp Kafka answers -1; kadm turns that into the end offset.
	l, err = adm.ListOffsetsAfterMilli(ctx, base+200_000, topic)
	if o := lookup("by timestamp after all", l, err); o.Offset != int64(len(tsOffsets)) {
		t.Errorf("by timestamp after all: offset %d, want end offset %d", o.Offset, len(tsOffsets))
	}
}

// TestFetchLongPoll checks that an empty fetch waits for max.wait.ms, and
// that a parked fetch (max.wait.ms=5000, min.bytes=1) is woken by a produce
// instead of running out its wait.
func TestFetchLongPoll(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	const topic = "long-poll"
	id := harness.CreateTopic(t, adm, topic, 1, nil)
	cl := b.Client()
	ctx := testCtx(t)

	start := time.Now()
	fp, err := fetchRaw(ctx, cl, topic, id, 0, 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); fp.ErrorCode != 0 || len(fp.RecordBatches) != 0 || el < 700*time.Millisecond {
		t.Fatalf("empty fetch with max wait 1s: error %d, %d bytes after %v; want no error, no bytes, ~1s", fp.ErrorCode, len(fp.RecordBatches), el)
	}

	type result struct {
		fp      *kmsg.FetchResponseTopicPartition
		err     error
		elapsed time.Duration
	}
	done := make(chan result, 1)
	start = time.Now()
	go func() {
		fp, err := fetchRaw(ctx, cl, topic, id, 0, 0, 5*time.Second)
		done <- result{fp, err, time.Since(start)}
	}()
	// The fetch must be parked before the produce for the test to mean
	// anything; nothing observable tells us it is, so give it a moment.
	time.Sleep(300 * time.Millisecond)
	produceSync(t, b.Client(), &kgo.Record{Topic: topic, Value: []byte("wake up")})
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.fp.ErrorCode != 0 || len(decodeBatches(t, r.fp.RecordBatches)) == 0 {
		t.Fatalf("woken fetch: error %d, %d bytes; want the produced batch", r.fp.ErrorCode, len(r.fp.RecordBatches))
	}
	if r.elapsed >= 4*time.Second {
		t.Fatalf("fetch with max wait 5s returned after %v although a record was produced at ~300ms", r.elapsed)
	}
	t.Logf("parked fetch returned after %v", r.elapsed)
}

// TestFetchHistoryAcrossSegments reads a topic of many small segments from
// the start with franz-go asking for far more than a segment holds
// (fetch.min.bytes 1 MiB, max wait 3 s). A read stops at its segment's
// end, so a fetch in an older segment must be answered at once (Kafka's
// DelayedFetch): only the fetch in the active segment may wait out its max
// wait. The check counts fetches that did (strata_fetch_expired_total),
// which no machine speed changes: one for the active segment, one more if
// the consumer's next poll at the log end ran out before it was closed;
// a broker that waits per segment expires one per older segment.
func TestFetchHistoryAcrossSegments(t *testing.T) {
	b, addr := startMetered(t)
	const topic, n, maxWait = "history", 60, 3 * time.Second
	harness.CreateTopic(t, b.Admin(), topic, 1, map[string]string{"segment.bytes": "1024"})
	prod := b.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := range n { // a batch each, three to a segment
		produceSync(t, prod, &kgo.Record{Value: fmt.Appendf(nil, "%03d-%s", i, strings.Repeat("x", 200))})
	}
	segments := metricValue(t, addr, `strata_log_segments{topic="history"}`)
	if segments < 15 {
		t.Fatalf("%d segments, want at least 15", segments)
	}

	cl := b.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMinBytes(1<<20), kgo.FetchMaxWait(maxWait))
	ctx := testCtx(t)
	start := time.Now()
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records in %v: %v", got, n, time.Since(start), err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}
	took := time.Since(start)
	cl.Close()
	expired := max(metricValue(t, addr, `strata_fetch_expired_total{fetcher="consumer"}`), 0)
	t.Logf("read %d records in %d segments in %v; %d fetches waited out max wait", n, segments, took, expired)
	if expired > 2 {
		t.Errorf("%d fetches waited out max wait reading %d segments, want at most 2 (the active segment, the log end)", expired, segments)
	}
}

// TestLogAppendTime checks message.timestamp.type=LogAppendTime: the broker
// stamps the batch with its own clock and consumers see that timestamp.
func TestLogAppendTime(t *testing.T) {
	b := harness.Start(t, nil)
	const topic = "log-append-time"
	harness.CreateTopic(t, b.Admin(), topic, 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	old := time.Now().Add(-24 * time.Hour).Truncate(time.Millisecond)
	before := time.Now().Truncate(time.Millisecond)
	produceSync(t, b.Client(), &kgo.Record{Topic: topic, Value: []byte("stamped"), Timestamp: old})
	after := time.Now()
	got := harness.ReadAll(t, b.Addr(), topic)[0]
	if len(got) != 1 {
		t.Fatalf("read %d records, want 1", len(got))
	}
	r := got[0]
	if r.Attrs.TimestampType() != 1 || r.Timestamp.Before(before) || r.Timestamp.After(after) {
		t.Errorf("timestamp %v (type %d), want the broker's append time in [%v, %v] (type 1)", r.Timestamp, r.Attrs.TimestampType(), before, after)
	}
}

// TestFetchOutOfRange checks OFFSET_OUT_OF_RANGE for a fetch past the end.
func TestFetchOutOfRange(t *testing.T) {
	b := harness.Start(t, nil)
	const topic = "out-of-range"
	id := harness.CreateTopic(t, b.Admin(), topic, 1, nil)
	cl := b.Client()
	produceSync(t, cl, &kgo.Record{Topic: topic, Value: []byte("only")})
	fp, err := fetchRaw(testCtx(t), cl, topic, id, 0, 100, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if fp.ErrorCode != kerr.OffsetOutOfRange.Code || fp.HighWatermark != 1 {
		t.Errorf("fetch at 100 of a 1-record log: error %v, high watermark %d; want OFFSET_OUT_OF_RANGE, 1", kerr.ErrorForCode(fp.ErrorCode), fp.HighWatermark)
	}
}
