package e2e

import (
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// overrides returns the topic-override configs of topic.
func overrides(t *testing.T, adm *kadm.Client, topic string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, c := range describe(t, adm, topic) {
		if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
			out[k] = c.MaybeValue()
		}
	}
	return out
}

// TestRestartKeepsDataConfigsAndIDs restarts an in-process broker and checks
// that records, end offsets, topic IDs and topic configs survive, that a
// deleted topic stays deleted, and that new records continue the offsets.
func TestRestartKeepsDataConfigsAndIDs(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	topics := map[string]struct {
		partitions int32
		configs    map[string]string
	}{
		"restart-a": {3, map[string]string{"retention.ms": "86400000", "segment.bytes": "65536"}},
		"restart-b": {1, map[string]string{"max.message.bytes": "500000"}},
	}
	ids := map[string]kadm.TopicID{}
	want := map[string][][]*kgo.Record{}
	var all []*kgo.Record
	base := time.Now().Truncate(time.Millisecond)
	for name, tc := range topics {
		ids[name] = harness.CreateTopic(t, adm, name, tc.partitions, tc.configs)
		want[name] = make([][]*kgo.Record, tc.partitions)
		for i := range 300 {
			p := int32(i) % tc.partitions
			r := &kgo.Record{Topic: name, Partition: p, Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "%s-%d", name, i),
				Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(strconv.Itoa(i))}}, Timestamp: base.Add(time.Duration(i) * time.Millisecond)}
			want[name][p] = append(want[name][p], r)
			all = append(all, r)
		}
	}
	harness.CreateTopic(t, adm, "restart-deleted", 1, nil)
	if r, err := adm.DeleteTopic(testCtx(t), "restart-deleted"); err != nil || r.Err != nil {
		t.Fatalf("delete topic: %v %v", err, r.Err)
	}
	produceSync(t, b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), all...)

	b.Restart()
	adm = b.Admin()

	for name, tc := range topics {
		td := topicDetail(t, adm, name)
		if td.ID != ids[name] || len(td.Partitions) != int(tc.partitions) {
			t.Errorf("%s after restart: ID %v, %d partitions; want %v, %d", name, td.ID, len(td.Partitions), ids[name], tc.partitions)
		}
		if got := overrides(t, adm, name); !maps.Equal(got, tc.configs) {
			t.Errorf("%s after restart: topic configs %v, want %v", name, got, tc.configs)
		}
		got := harness.ReadAll(t, b.Addr(), name)
		for p, recs := range want[name] {
			checkPartition(t, name, int32(p), recs, got[int32(p)])
		}
	}
	if mt := metadataFor(t, b.Client(), "restart-deleted", false); mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("deleted topic is back after restart (metadata error %d)", mt.ErrorCode)
	}

	next := &kgo.Record{Topic: "restart-b", Value: []byte("after restart")}
	produceSync(t, b.Client(), next)
	if next.Offset != int64(len(want["restart-b"][0])) {
		t.Errorf("first record after restart got offset %d, want %d", next.Offset, len(want["restart-b"][0]))
	}
}

// TestKill9DuringIdempotentProduce streams 20k records with an idempotent
// acks=all producer into the real binary, SIGKILLs it twice mid-stream
// (restarting it each time), lets the producer finish, and checks that
// every acknowledged record is in the log exactly once at its acked offset,
// with no duplicates and per-partition produce order kept.
func TestKill9DuringIdempotentProduce(t *testing.T) {
	// A short session lets the restarted broker re-register once the dead one's lease lapses.
	p := harness.StartProcess(t, map[string]string{"broker.session.timeout.ms": "3000"})
	const topic, partitions, total = "crash", 3, 20000
	killAt := []int64{4000, 12000}
	harness.CreateTopic(t, harness.NewAdmin(t, p.Addr()), topic, partitions, nil)

	cl := harness.NewClient(t, p.Addr(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(2000),
		kgo.RecordDeliveryTimeout(60*time.Second),
	)
	var (
		mu     sync.Mutex
		acked  = map[int]int64{} // record index → acked offset
		failed = map[int]error{}
		nAcked atomic.Int64
		wg     sync.WaitGroup
	)
	ctx := testCtx(t)
	wg.Add(total)
	go func() {
		for i := range total {
			r := &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: fmt.Appendf(nil, "%06d", i)}
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed[i] = err
					return
				}
				acked[i] = r.Offset
				nAcked.Add(1)
			})
		}
	}()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for _, at := range killAt {
		for nAcked.Load() < at {
			select {
			case <-tick.C:
			case <-ctx.Done():
				t.Fatalf("only %d records acked before the deadline, waiting for %d", nAcked.Load(), at)
			}
		}
		p.Kill9()
		t.Logf("killed broker after %d acks", nAcked.Load())
		p.Restart()
	}

	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-ctx.Done():
		t.Fatalf("producer did not finish: %d acked", nAcked.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d acked, %d failed of %d", len(acked), len(failed), total)
	for i, err := range failed {
		t.Logf("e.g. record %d failed: %v", i, err)
		break
	}
	checkCrashLog(t, harness.ReadAll(t, p.Addr(), topic), acked)
}

// checkCrashLog checks a log of "%06d" record indexes: no index twice,
// increasing within each partition, and every acked index at its offset.
func checkCrashLog(t *testing.T, got map[int32][]*kgo.Record, acked map[int]int64) {
	t.Helper()
	seen := map[int]int64{} // record index → offset
	for part, recs := range got {
		last := -1
		for _, r := range recs {
			i, err := strconv.Atoi(string(r.Value))
			if err != nil {
				t.Fatalf("%d/%d: unexpected value %q", part, r.Offset, r.Value)
			}
			if prev, dup := seen[i]; dup {
				t.Errorf("record %d is in the log twice: offsets %d and %d of partition %d", i, prev, r.Offset, part)
			}
			seen[i] = r.Offset
			if i <= last {
				t.Errorf("partition %d out of order: record %d at offset %d after record %d", part, i, r.Offset, last)
			}
			last = i
		}
	}
	missing := 0
	for i, off := range acked {
		got, ok := seen[i]
		switch {
		case !ok:
			missing++
			if missing <= 5 {
				t.Errorf("acked record %d (offset %d) is missing", i, off)
			}
		case got != off:
			t.Errorf("acked record %d: acked at offset %d, found at %d", i, off, got)
		}
	}
	if missing > 0 {
		t.Errorf("%d acked records missing after kill -9", missing)
	}
}
