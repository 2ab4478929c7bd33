package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestKcat produces lines with `kcat -P`, consumes them with `kcat -C`, and
// lists metadata with `kcat -L -J` (librdkafka).
func TestKcat(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	harness.CreateTopic(t, adm, "kcat", 3, nil)
	harness.CreateTopic(t, adm, "kcat-ordered", 1, nil)

	var lines []string
	for i := range 200 {
		lines = append(lines, fmt.Sprintf("line-%03d", i))
	}
	in := strings.Join(lines, "\n") + "\n"
	harness.KcatStdin(t, in, "-b", b.Addr(), "-P", "-t", "kcat")
	out := harness.Kcat(t, "-b", b.Addr(), "-C", "-t", "kcat", "-o", "beginning", "-e", "-q")
	got := strings.Fields(out)
	slices.Sort(got)
	if !slices.Equal(got, lines) {
		t.Errorf("kcat consumed %d lines (sorted %.5q…), produced %d", len(got), got, len(lines))
	}
	total := 0
	for _, recs := range harness.ReadAll(t, b.Addr(), "kcat") {
		total += len(recs)
	}
	if total != len(lines) {
		t.Errorf("kgo reads %d records of kcat's %d", total, len(lines))
	}

	// One partition, keys: order and key/value split must round-trip.
	var keyed []string
	for i := range 50 {
		keyed = append(keyed, fmt.Sprintf("k%d:v%d", i, i))
	}
	harness.KcatStdin(t, strings.Join(keyed, "\n")+"\n", "-b", b.Addr(), "-P", "-t", "kcat-ordered", "-p", "0", "-K", ":")
	out = harness.Kcat(t, "-b", b.Addr(), "-C", "-t", "kcat-ordered", "-o", "beginning", "-e", "-q", "-f", "%k:%s@%o\n")
	var want []string
	for i, kv := range keyed {
		want = append(want, fmt.Sprintf("%s@%d", kv, i))
	}
	if got := strings.Fields(out); !slices.Equal(got, want) {
		t.Errorf("kcat keyed round trip:\n got %q\nwant %q", got, want)
	}

	var md struct {
		Brokers []struct {
			ID   int32  `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic      string `json:"topic"`
			Partitions []struct {
				Partition int32 `json:"partition"`
				Leader    int32 `json:"leader"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	out = harness.Kcat(t, "-b", b.Addr(), "-L", "-J")
	if err := json.Unmarshal([]byte(out), &md); err != nil {
		t.Fatalf("kcat -L -J output is not JSON: %v\n%s", err, out)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].Name != b.Addr() {
		t.Errorf("kcat -L brokers %+v, want one at %s", md.Brokers, b.Addr())
	}
	parts := map[string]int{}
	for _, tp := range md.Topics {
		parts[tp.Topic] = len(tp.Partitions)
		for _, p := range tp.Partitions {
			if len(md.Brokers) == 1 && p.Leader != md.Brokers[0].ID {
				t.Errorf("kcat -L: %s/%d leader %d, want broker %d", tp.Topic, p.Partition, p.Leader, md.Brokers[0].ID)
			}
		}
	}
	if parts["kcat"] != 3 || parts["kcat-ordered"] != 1 {
		t.Errorf("kcat -L topics %v, want kcat with 3 partitions and kcat-ordered with 1", parts)
	}
}

// pythonRoundTrip produces N keyed records with kafka-python, then reads the
// whole topic back with a manually assigned consumer (no group) and prints
// the values it saw as JSON.
const pythonRoundTrip = `
import json, sys, time
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

addr, topic, n, expect = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
producer = KafkaProducer(bootstrap_servers=addr, acks='all', linger_ms=5)
futures = [producer.send(topic, key=b'k%d' % i, value=b'py-%d' % i, headers=[('h', b'%d' % i)]) for i in range(n)]
producer.flush(30)
acked = sum(1 for f in futures if f.succeeded())
producer.close(10)

consumer = KafkaConsumer(bootstrap_servers=addr, group_id=None, enable_auto_commit=False,
                         auto_offset_reset='earliest', consumer_timeout_ms=1000)
parts = consumer.partitions_for_topic(topic) or set()
consumer.assign([TopicPartition(topic, p) for p in sorted(parts)])
consumer.seek_to_beginning()
values, deadline = [], time.time() + 30
while len(values) < expect and time.time() < deadline:
    for records in consumer.poll(timeout_ms=500).values():
        for r in records:
            values.append({'p': r.partition, 'o': r.offset, 'k': (r.key or b'').decode(), 'v': r.value.decode(),
                           'h': [[k, v.decode()] for k, v in (r.headers or [])]})
consumer.close()
print(json.dumps({'acked': acked, 'partitions': len(parts), 'records': values}))
`

// TestKafkaPython round-trips records through kafka-python and checks that
// Go and Python see each other's records.
func TestKafkaPython(t *testing.T) {
	b := harness.Start(t, nil)
	const topic, fromGo, fromPy = "python", 30, 300
	harness.CreateTopic(t, b.Admin(), topic, 3, nil)
	var recs []*kgo.Record
	for i := range fromGo {
		recs = append(recs, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "g%d", i), Value: fmt.Appendf(nil, "go-%d", i),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(strconv.Itoa(i))}}})
	}
	// gzip: python3-kafka has no snappy library, and kgo defaults to snappy.
	produceSync(t, b.Client(kgo.ProducerBatchCompression(kgo.GzipCompression())), recs...)

	out := harness.Python(t, pythonRoundTrip, b.Addr(), topic, strconv.Itoa(fromPy), strconv.Itoa(fromGo+fromPy))
	var res struct {
		Acked      int `json:"acked"`
		Partitions int `json:"partitions"`
		Records    []struct {
			P int32      `json:"p"`
			O int64      `json:"o"`
			K string     `json:"k"`
			V string     `json:"v"`
			H [][]string `json:"h"`
		} `json:"records"`
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("python output: %v\n%s", err, out)
	}
	if res.Acked != fromPy || res.Partitions != 3 {
		t.Errorf("python: %d of %d records acked, %d partitions seen (want 3)", res.Acked, fromPy, res.Partitions)
	}
	seen := map[string]int{}
	for _, r := range res.Records {
		seen[r.V]++
		prefix, num, _ := strings.Cut(r.V, "-")
		wantKey := map[string]string{"go": "g", "py": "k"}[prefix] + num
		if r.K != wantKey || len(r.H) != 1 || r.H[0][0] != "h" || r.H[0][1] != num {
			t.Errorf("python read %+v: want key %q and header h=%s", r, wantKey, num)
		}
	}
	for i := range fromGo {
		if v := fmt.Sprintf("go-%d", i); seen[v] != 1 {
			t.Errorf("python saw Go's %s %d times", v, seen[v])
		}
	}
	for i := range fromPy {
		if v := fmt.Sprintf("py-%d", i); seen[v] != 1 {
			t.Errorf("python saw its own %s %d times", v, seen[v])
		}
	}
	total := 0
	for _, rs := range harness.ReadAll(t, b.Addr(), topic) {
		total += len(rs)
	}
	if total != fromGo+fromPy {
		t.Errorf("kgo reads %d records, want %d", total, fromGo+fromPy)
	}
}

// TestSarama round-trips records through sarama's SyncProducer (plain and
// idempotent) and its partition consumer (no group).
func TestSarama(t *testing.T) {
	b := harness.Start(t, nil)
	const topic, perMode = "sarama", 100
	harness.CreateTopic(t, b.Admin(), topic, 2, nil)

	type sent struct {
		msg       *sarama.ProducerMessage
		partition int32
		offset    int64
	}
	var all []sent
	for _, idempotent := range []bool{false, true} {
		cfg := sarama.NewConfig()
		cfg.Producer.Return.Successes = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		cfg.Producer.Idempotent = idempotent
		if idempotent {
			cfg.Net.MaxOpenRequests = 1
		}
		prod, err := sarama.NewSyncProducer([]string{b.Addr()}, cfg)
		if err != nil {
			t.Fatalf("sarama producer (idempotent %v): %v", idempotent, err)
		}
		for i := range perMode {
			m := &sarama.ProducerMessage{
				Topic:     topic,
				Partition: int32(i % 2),
				Key:       sarama.StringEncoder(fmt.Sprintf("key-%v-%d", idempotent, i)),
				Value:     sarama.StringEncoder(fmt.Sprintf("value-%v-%d", idempotent, i)),
				Headers:   []sarama.RecordHeader{{Key: []byte("idempotent"), Value: []byte(strconv.FormatBool(idempotent))}},
				Timestamp: time.UnixMilli(1_700_000_000_000 + int64(i)),
			}
			p, off, err := prod.SendMessage(m)
			if err != nil {
				t.Fatalf("sarama send %d (idempotent %v): %v", i, idempotent, err)
			}
			all = append(all, sent{m, p, off})
		}
		if err := prod.Close(); err != nil {
			t.Errorf("sarama producer close: %v", err)
		}
	}

	cons, err := sarama.NewConsumer([]string{b.Addr()}, sarama.NewConfig())
	if err != nil {
		t.Fatalf("sarama consumer: %v", err)
	}
	defer cons.Close()
	got := map[int32]map[int64]*sarama.ConsumerMessage{}
	for p := range int32(2) {
		pc, err := cons.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama consume partition %d: %v", p, err)
		}
		got[p] = map[int64]*sarama.ConsumerMessage{}
		timeout := time.After(30 * time.Second)
		for len(got[p]) < perMode {
			select {
			case m := <-pc.Messages():
				got[p][m.Offset] = m
			case err := <-pc.Errors():
				t.Fatalf("sarama partition %d: %v", p, err)
			case <-timeout:
				t.Fatalf("sarama partition %d: %d of %d messages after 30s", p, len(got[p]), perMode)
			}
		}
		pc.Close()
	}
	for _, s := range all {
		m := got[s.partition][s.offset]
		if m == nil {
			t.Errorf("message acked at %d/%d not consumed", s.partition, s.offset)
			continue
		}
		k, _ := s.msg.Key.Encode()
		v, _ := s.msg.Value.Encode()
		if string(m.Key) != string(k) || string(m.Value) != string(v) || len(m.Headers) != 1 ||
			string(m.Headers[0].Value) != string(s.msg.Headers[0].Value) || !m.Timestamp.Equal(s.msg.Timestamp) {
			t.Errorf("%d/%d: consumed key %q value %q headers %d ts %v; produced key %q value %q ts %v",
				s.partition, s.offset, m.Key, m.Value, len(m.Headers), m.Timestamp, k, v, s.msg.Timestamp)
		}
	}
}
