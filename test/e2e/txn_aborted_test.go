package e2e

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// txnRounds produces rounds transactions with a franz-go transactional
// producer to partition 0 of topic, keys and values starting with prefix, every third one aborted, each of
// perTxn records of about 200 bytes. A committed record's key is unique;
// an aborted one reuses the key of a committed record of the previous
// round, so that an aborted record taken for live data would supersede
// it in a compacted topic. It returns the committed values and the
// aborted ones.
func txnRounds(t *testing.T, pr *kgo.Client, topic, prefix string, rounds, perTxn int) (committed, aborted map[string]bool) {
	t.Helper()
	ctx := testCtx(t)
	committed, aborted = map[string]bool{}, map[string]bool{}
	for r := range rounds {
		commit := r%3 != 1
		if err := pr.BeginTransaction(); err != nil {
			t.Fatalf("begin %d: %v", r, err)
		}
		var recs []*kgo.Record
		for i := range perTxn {
			key, value := fmt.Sprintf("%sc-%d-%d", prefix, r, i), fmt.Sprintf("%scommitted-%d-%d;%s", prefix, r, i, strings.Repeat("c", 180))
			if !commit {
				key, value = fmt.Sprintf("%sc-%d-%d", prefix, r-1, i), fmt.Sprintf("%saborted-%d-%d;%s", prefix, r, i, strings.Repeat("a", 180))
			}
			recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Key: []byte(key), Value: []byte(value)})
		}
		if err := pr.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce round %d: %v", r, err)
		}
		if err := pr.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end round %d (commit %v): %v", r, commit, err)
		}
		for _, rec := range recs {
			if commit {
				committed[string(rec.Value)] = true
			} else {
				aborted[string(rec.Value)] = true
			}
		}
	}
	return committed, aborted
}

// txnProducer makes the transactional producer of these tests.
func txnProducer(newClient func(...kgo.Opt) *kgo.Client, id string) *kgo.Client {
	return newClient(kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
}

// readCommittedOnce reads topic from the start with a read_committed
// franz-go consumer until it has every value of want, failing on any
// other value (an aborted record) or a value read twice.
func readCommittedOnce(t *testing.T, newClient func(...kgo.Opt) *kgo.Client, topic string, want map[string]bool) {
	t.Helper()
	ctx := testCtx(t)
	cl := newClient(kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	got := map[string]bool{}
	for len(got) < len(want) && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, e := range fs.Errors() {
			if ctx.Err() == nil {
				t.Fatalf("poll: %v", e.Err)
			}
		}
		for _, r := range fs.Records() {
			v := string(r.Value)
			if !want[v] || got[v] {
				t.Fatalf("read_committed consumer read %.20q at offset %d (wanted %v, read before %v)", v, r.Offset, want[v], got[v])
			}
			got[v] = true
		}
	}
	if len(got) != len(want) {
		t.Fatalf("read_committed consumer read %d of %d committed records", len(got), len(want))
	}
}

// readUncommitted reads topic from the start with a read_uncommitted
// franz-go consumer up to the record holding value last and returns the
// values read, with their offsets.
func readUncommitted(t *testing.T, b *harness.Broker, topic, last string) map[string]int64 {
	t.Helper()
	ctx := testCtx(t)
	cl := b.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	out := map[string]int64{}
	for _, ok := out[last]; !ok && ctx.Err() == nil; _, ok = out[last] {
		fs := cl.PollFetches(ctx)
		for _, e := range fs.Errors() {
			if ctx.Err() == nil {
				t.Fatalf("poll: %v", e.Err)
			}
		}
		for _, r := range fs.Records() {
			out[string(r.Value)] = r.Offset
		}
	}
	if _, ok := out[last]; !ok {
		t.Fatalf("read_uncommitted consumer did not reach %q", last)
	}
	return out
}

// produceLast produces the plain record that ends the topic's partition
// 0 for readUncommitted and returns its value.
func produceLast(t *testing.T, b *harness.Broker, topic string) string {
	t.Helper()
	produceSync(t, b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), &kgo.Record{Topic: topic, Key: []byte("last"), Value: []byte("last")})
	return "last"
}

// TestTxnAbortedCompacted: on a compacted topic the cleaner removes the
// records of aborted transactions (which never supersede a committed
// record of their key); read_committed reads every committed record once
// and no aborted one, before and after cleaning, and read_uncommitted
// still sees the aborted records the cleaner has not reached.
func TestTxnAbortedCompacted(t *testing.T) {
	cfg := maps.Clone(fastCleanup)
	cfg["transaction.state.log.num.partitions"] = "3"
	b := harness.Start(t, cfg)
	const topic = "txn-compacted"
	harness.CreateTopic(t, b.Admin(), topic, 1, map[string]string{
		"cleanup.policy":            "compact",
		"segment.bytes":             "4096",
		"min.cleanable.dirty.ratio": "0.01",
		"delete.retention.ms":       "0",
	})
	pr := txnProducer(b.Client, "txn-compacted")
	committed, aborted := txnRounds(t, pr, topic, "", 30, 5)
	cleanEnd := endOffset(t, b.Admin(), topic, 0)
	// Committed filler rolls segments past cleanEnd, so that everything
	// below it becomes cleanable; a last aborted transaction stays in the
	// active segment.
	plain := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := range 30 {
		v := fmt.Sprintf("filler-%d;%s", i, strings.Repeat("f", 200))
		produceSync(t, plain, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "f-%d", i), Value: []byte(v)})
		committed[v] = true
	}
	tailCommitted, tailAborted := txnRounds(t, pr, topic, "tail-", 2, 3) // round 1 aborts
	maps.Copy(committed, tailCommitted)
	last := produceLast(t, b, topic)
	committed[last] = true
	readCommittedOnce(t, b.Client, topic, committed)

	waitFor(t, "the cleaner to remove every aborted record below the filler", func() bool {
		for v, off := range readUncommitted(t, b, topic, last) {
			if aborted[v] && off < cleanEnd {
				return false
			}
		}
		return true
	})
	seen := readUncommitted(t, b, topic, last)
	for v := range tailAborted {
		if _, ok := seen[v]; !ok {
			t.Fatalf("aborted record %.20q in the active segment is gone for read_uncommitted", v)
		}
	}
	for v := range committed {
		if _, ok := seen[v]; !ok {
			t.Fatalf("committed record %.20q removed by the cleaner", v)
		}
	}
	readCommittedOnce(t, b.Client, topic, committed)
}

// TestTxnAbortedTiered: the segments of a tiered topic holding committed
// and aborted transactions go cold; a read_committed consumer reading
// them from the tier gets every committed record once and no aborted one
// (the aborted transactions come from the copies' transaction indexes),
// and a read_uncommitted one reads the aborted records too.
func TestTxnAbortedTiered(t *testing.T) {
	cfg := maps.Clone(fastTiering)
	cfg["transaction.state.log.num.partitions"] = "3"
	b := harness.Start(t, cfg)
	const topic = "txn-tiered"
	harness.CreateTopic(t, b.Admin(), topic, 1, tieredTopic)
	pr := txnProducer(b.Client, "txn-tiered")
	committed, aborted := txnRounds(t, pr, topic, "", 90, 5)
	last := produceLast(t, b, topic)
	committed[last] = true
	cl := b.Client()
	waitTiered(t, b, cl, topic, 1)
	if local := listOffset(t, cl, topic, 0, -4); local < 3*16384/200 {
		t.Fatalf("local log starts at %d: too little is cold", local)
	}
	readCommittedOnce(t, b.Client, topic, committed)
	seen := readUncommitted(t, b, topic, last)
	for v := range aborted {
		if _, ok := seen[v]; !ok {
			t.Fatalf("read_uncommitted consumer did not read aborted record %.20q", v)
		}
	}
}
