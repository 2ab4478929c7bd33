package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// confluentTxn consumes n records of src in a group with
// confluent-kafka-python (librdkafka), then with a transactional producer
// copies the first half to dst (prefixed "committed-") in a transaction
// that also commits the group's offset past them, copies the second half
// (prefixed "aborted-", flushed so they reach the log) in a transaction
// that commits the offset past them too and is aborted, and commits a
// last transaction holding only "end". A read_committed consumer then
// reads dst up to "end". It prints the values read and the group's
// committed offset of src as JSON.
const confluentTxn = `
import json, sys, time
from confluent_kafka import Consumer, Producer, TopicPartition

addr, src, dst, group, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
deadline = time.time() + 45

def consume(c, done):
    out = []
    while not done(out):
        if time.time() > deadline:
            raise SystemExit('consumed only %r' % [m.value() for m in out])
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            raise SystemExit('consume: %s' % m.error())
        out.append(m)
    return out

src_consumer = Consumer({'bootstrap.servers': addr, 'group.id': group, 'enable.auto.commit': False,
                         'auto.offset.reset': 'earliest', 'isolation.level': 'read_committed'})
src_consumer.subscribe([src])
inputs = consume(src_consumer, lambda out: len(out) >= n)

producer = Producer({'bootstrap.servers': addr, 'transactional.id': 'confluent-txn', 'linger.ms': 5})
producer.init_transactions(30)

def txn(msgs, prefix, commit):
    producer.begin_transaction()
    for m in msgs:
        producer.produce(dst, key=m.key(), value=prefix + m.value())
    producer.flush(30)
    if msgs:
        last = msgs[-1]
        producer.send_offsets_to_transaction([TopicPartition(src, last.partition(), last.offset() + 1)],
                                             src_consumer.consumer_group_metadata(), 30)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)

txn(inputs[:n // 2], b'committed-', True)
txn(inputs[n // 2:], b'aborted-', False)
producer.begin_transaction()
producer.produce(dst, value=b'end')
producer.commit_transaction(30)

committed = src_consumer.committed([TopicPartition(src, 0)], 30)[0].offset
src_consumer.close()

reader = Consumer({'bootstrap.servers': addr, 'group.id': group + '-reader', 'enable.auto.commit': False,
                   'isolation.level': 'read_committed'})
reader.assign([TopicPartition(dst, 0, 0)])
read = consume(reader, lambda out: out and out[-1].value() == b'end')
reader.close()
print(json.dumps({'values': [m.value().decode() for m in read], 'committed': committed}))
`

// TestConfluentTxn runs confluentTxn: librdkafka's transactional
// producer and its send_offsets_to_transaction against Strata. Its
// read_committed consumer must read exactly the committed copies, the
// aborted ones must be in the log all the same (so the abort was not
// vacuous), and the group's committed offset is the one the committed
// transaction carried, not the aborted one's.
func TestConfluentTxn(t *testing.T) {
	o := maps.Clone(groupOverrides)
	o["transaction.state.log.num.partitions"] = "3"
	b := harness.Start(t, o)
	const src, dst, group, n = "confluent-src", "confluent-dst", "confluent-eos", 10
	harness.CreateTopic(t, b.Admin(), src, 1, nil)
	harness.CreateTopic(t, b.Admin(), dst, 1, nil)
	in := b.Client(kgo.DefaultProduceTopic(src))
	var want []string
	for i := range n {
		produceSync(t, in, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)})
		if i < n/2 {
			want = append(want, fmt.Sprintf("committed-v%d", i))
		}
	}
	want = append(want, "end")

	out := harness.PythonConfluent(t, confluentTxn, b.Addr(), src, dst, group, strconv.Itoa(n))
	var res struct {
		Values    []string `json:"values"`
		Committed int64    `json:"committed"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("python output: %v\n%s", err, out)
	}
	if !slices.Equal(res.Values, want) {
		t.Errorf("read_committed confluent consumer read %q, want %q", res.Values, want)
	}
	if res.Committed != n/2 {
		t.Errorf("confluent consumer sees the group's committed offset %d, want %d", res.Committed, n/2)
	}

	offs, err := b.Admin().FetchOffsets(testCtx(t), group)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	if o, ok := offs.Lookup(src, 0); !ok || o.At != n/2 {
		t.Errorf("group %s committed offset of %s/0: %+v (found %v), want %d", group, src, o, ok, n/2)
	}

	// read_uncommitted, up to "end": ReadAll's high watermark would wait
	// for the commit marker that follows it, which is no record.
	cl := b.Client(kgo.ConsumeTopics(dst), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := testCtx(t)
	var all []string
	for len(all) == 0 || all[len(all)-1] != "end" {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_uncommitted consumer read %q, not yet end: %v", all, ctx.Err())
		}
		for _, e := range fs.Errors() {
			t.Fatalf("poll %s: %v", dst, e.Err)
		}
		for _, r := range fs.Records() {
			all = append(all, string(r.Value))
		}
	}
	aborted := 0
	for _, v := range all {
		if strings.HasPrefix(v, "aborted-") {
			aborted++
		}
	}
	if aborted != n-n/2 || len(all) != n+1 {
		t.Errorf("read_uncommitted: %s holds %q, want the %d committed, %d aborted and end", dst, all, n/2, n-n/2)
	}
}
