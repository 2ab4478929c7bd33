package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// testCtx is a context that bounds one test's client calls.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// produceSync produces recs, waits for every ack and fails on any error.
func produceSync(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records: %v", len(recs), err)
	}
}

// topicDetail returns the metadata of topic, failing if it cannot be
// loaded. A retriable error (a broker whose metadata watch has not yet
// applied a topic just created, as a Kafka broker's metadata cache lags
// the controller) is retried for up to 30 s.
func topicDetail(t testing.TB, adm *kadm.Client, topic string) kadm.TopicDetail {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		md, err := adm.Metadata(testCtx(t), topic)
		if err != nil {
			t.Fatalf("metadata %s: %v", topic, err)
		}
		td, ok := md.Topics[topic]
		switch {
		case !ok:
			t.Fatalf("metadata %s: topic missing from response", topic)
		case td.Err == nil:
			return td
		case !kerr.IsRetriable(td.Err) || time.Now().After(deadline):
			t.Fatalf("metadata %s: %v", topic, td.Err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// endOffset returns the high watermark of topic/partition.
func endOffset(t testing.TB, adm *kadm.Client, topic string, partition int32) int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatalf("list end offsets %s: %v", topic, err)
	}
	o, ok := ends.Lookup(topic, partition)
	if !ok || o.Err != nil {
		t.Fatalf("list end offsets %s/%d: found %v, err %v", topic, partition, ok, o.Err)
	}
	return o.Offset
}

// sameRecord reports how got differs from want in key, value, headers and
// timestamp; null and empty byte strings are told apart.
func sameRecord(want, got *kgo.Record) error {
	if !sameBytes(want.Key, got.Key) {
		return fmt.Errorf("key %q (nil %v), want %q (nil %v)", got.Key, got.Key == nil, want.Key, want.Key == nil)
	}
	if !sameBytes(want.Value, got.Value) {
		return fmt.Errorf("value %.40q… (len %d, nil %v), want %.40q… (len %d, nil %v)",
			got.Value, len(got.Value), got.Value == nil, want.Value, len(want.Value), want.Value == nil)
	}
	if len(want.Headers) != len(got.Headers) {
		return fmt.Errorf("%d headers, want %d", len(got.Headers), len(want.Headers))
	}
	for i, h := range want.Headers {
		g := got.Headers[i]
		if g.Key != h.Key || !sameBytes(g.Value, h.Value) {
			return fmt.Errorf("header %d = %q:%q (nil %v), want %q:%q (nil %v)", i, g.Key, g.Value, g.Value == nil, h.Key, h.Value, h.Value == nil)
		}
	}
	if w, g := want.Timestamp.UnixMilli(), got.Timestamp.UnixMilli(); w != g {
		return fmt.Errorf("timestamp %d, want %d", g, w)
	}
	return nil
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// checkPartition verifies that got is exactly want, in order, at offsets 0..n-1.
func checkPartition(t testing.TB, topic string, p int32, want, got []*kgo.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s/%d: read %d records, produced %d", topic, p, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i].Offset != int64(i) {
			t.Fatalf("%s/%d: record %d has offset %d", topic, p, i, got[i].Offset)
		}
		if want[i].Offset != got[i].Offset {
			t.Fatalf("%s/%d: record %d acked at offset %d but read at %d", topic, p, i, want[i].Offset, got[i].Offset)
		}
		if err := sameRecord(want[i], got[i]); err != nil {
			t.Fatalf("%s/%d offset %d: %v", topic, p, i, err)
		}
	}
}

// fetchRaw issues one sessionless Fetch for a single partition and returns
// that partition's part of the response.
func fetchRaw(ctx context.Context, cl *kgo.Client, topic string, id kadm.TopicID, p int32, offset int64, maxWait time.Duration) (*kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(maxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = 16 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offset, 8<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("fetch %s/%d@%d: %w", topic, p, offset, err)
	}
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("fetch %s/%d@%d: top-level error code %d", topic, p, offset, resp.ErrorCode)
	}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if resp.Topics[i].Partitions[j].Partition == p {
				return &resp.Topics[i].Partitions[j], nil
			}
		}
	}
	return nil, fmt.Errorf("fetch %s/%d@%d: partition missing from response (v%d)", topic, p, offset, req.GetVersion())
}

// decodeBatches splits raw fetched bytes into record batches. A trailing
// partial batch (allowed in fetch responses) is ignored.
func decodeBatches(t testing.TB, raw []byte) []kmsg.RecordBatch {
	t.Helper()
	var out []kmsg.RecordBatch
	for len(raw) >= 12 {
		n := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
		if n < 12 || n > len(raw) {
			break
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:n]); err != nil {
			t.Fatalf("decode fetched batch: %v", err)
		}
		out = append(out, b)
		raw = raw[n:]
	}
	return out
}

// kcatRecords reads partition 0 of topic from its start with kcat: each
// record's offset, key and value (nil for a tombstone).
func kcatRecords(t testing.TB, addr, topic string) []*kgo.Record {
	t.Helper()
	out := harness.Kcat(t, "-C", "-b", addr, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q",
		"-f", "%o\t%k\t%S\t%s\n")
	var recs []*kgo.Record
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		f := strings.SplitN(line, "\t", 4)
		if len(f) != 4 {
			t.Fatalf("kcat: bad line %q", line)
		}
		o, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatalf("kcat: bad offset in %q", line)
		}
		r := &kgo.Record{Offset: o, Key: []byte(f[1])}
		if f[2] != "-1" {
			r.Value = []byte(f[3])
		}
		recs = append(recs, r)
	}
	return recs
}
