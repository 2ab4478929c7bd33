package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	miniogo "github.com/minio/minio-go/v7"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/test/harness"
	"github.com/strata-broker/strata/test/minio"
)

// tieredTopic is what the tiering tests create: small segments, local
// copies dropped as soon as the remote copy is finished.
var tieredTopic = map[string]string{
	"remote.storage.enable": "true",
	"segment.bytes":         "16384",
	"local.retention.ms":    "1",
}

// fastTiering runs the remote log manager every 100 ms.
var fastTiering = map[string]string{
	"remote.log.storage.system.enable":    "true",
	"remote.log.manager.task.interval.ms": "100",
	"remote.log.reader.cache.bytes":       "262144",
}

// tieredProducer makes clients that produce uncompressed records to the
// partition each record names: segment counts stay predictable, and
// python3-kafka (no snappy library, kgo's default codec) reads them.
var tieredProducer = []kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression())}

// objectKey is the layout of a tiered segment's objects.
var objectKey = regexp.MustCompile(`^[a-z0-9.-]+-[0-9a-f]{32}/\d+/(\d{20}-[0-9a-f]{16}\.(log|index|timeindex|txnindex|epochs|producers)|manifest\.json)$`)

// produceTiered produces n records of about 200 bytes to each partition
// and returns them by partition, as acknowledged; cl must use the manual
// partitioner.
func produceTiered(t *testing.T, cl *kgo.Client, topic string, partitions int32, n int) map[int32][]*kgo.Record {
	t.Helper()
	out := map[int32][]*kgo.Record{}
	for p := range partitions {
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "k%d-%d", p, i), Value: bytes.Repeat(fmt.Appendf(nil, "v%d-%d;", p, i), 20)})
		}
		for chunk := range slices.Chunk(recs, 100) {
			produceSync(t, cl, chunk...)
		}
		out[p] = recs
	}
	return out
}

// localLogs counts a partition's .log files on the broker's disk.
func localLogs(t *testing.T, b *harness.Broker, topic string, p int32) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(b.Dir(), fmt.Sprintf("%s-%d", topic, p), "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// listOffset answers ListOffsets with a special timestamp (-4, -5, …).
func listOffset(t *testing.T, cl *kgo.Client, topic string, p int32, ts int64) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("list offsets %s/%d ts %d: %v %+v", topic, p, ts, err, resp)
	}
	return resp.Topics[0].Partitions[0].Offset
}

// waitTiered waits until every partition's sealed segments left the local
// disk (at most the active one and one more remain) and checks that the
// local log start never passes what is tiered.
func waitTiered(t *testing.T, b *harness.Broker, cl *kgo.Client, topic string, partitions int32) {
	t.Helper()
	for p := range partitions {
		waitFor(t, fmt.Sprintf("%s/%d local segments to be tiered", topic, p), func() bool {
			return localLogs(t, b, topic, p) <= 2 && listOffset(t, cl, topic, p, -4) > 0
		})
		local, tiered := listOffset(t, cl, topic, p, -4), listOffset(t, cl, topic, p, -5)
		if tiered < 0 || local > tiered+1 {
			t.Fatalf("%s/%d: local log starts at %d but only up to %d is tiered", topic, p, local, tiered)
		}
		if earliest := listOffset(t, cl, topic, p, -2); earliest != 0 {
			t.Fatalf("%s/%d: earliest offset %d, want 0 (in the bucket)", topic, p, earliest)
		}
	}
}

// checkConsumed reads the topic from offset 0 with kgo and compares every
// record with what was produced.
func checkConsumed(t *testing.T, b *harness.Broker, topic string, want map[int32][]*kgo.Record) {
	t.Helper()
	got := harness.ReadAll(t, b.Addr(), topic)
	for p, recs := range want {
		checkPartition(t, topic, p, recs, got[p])
	}
}

// TestTieredStorageMinIO tiers a two-partition topic to a real MinIO,
// checks the objects with minio-go, and reads everything back from offset
// 0 with kgo, kcat and kafka-python; a cold raw fetch is byte-identical to
// the object.
func TestTieredStorageMinIO(t *testing.T) {
	srv := minio.Start(t)
	cfg := minioTiering(srv)
	cfg["remote.log.storage.s3.prefix"] = "strata-test"
	b := harness.Start(t, cfg)
	adm := b.Admin()
	id := harness.CreateTopic(t, adm, "tiered", 2, tieredTopic)
	cl := b.Client(tieredProducer...)
	want := produceTiered(t, cl, "tiered", 2, 1500)
	waitTiered(t, b, cl, "tiered", 2)

	// What the broker wrote, seen independently.
	ctx := testCtx(t)
	var logs []miniogo.ObjectInfo
	for o := range srv.Client.ListObjects(ctx, srv.Bucket, miniogo.ListObjectsOptions{Prefix: "strata-test/", Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		key := strings.TrimPrefix(o.Key, "strata-test/")
		if !objectKey.MatchString(key) {
			t.Errorf("unexpected object %q", o.Key)
		}
		if strings.HasPrefix(key, fmt.Sprintf("tiered-%x/0/", [16]byte(id))) && strings.HasSuffix(key, ".log") {
			logs = append(logs, o)
		}
	}
	if len(logs) < 5 {
		t.Fatalf("%d segment objects for partition 0", len(logs))
	}
	first := logs[0] // names sort by base offset: this one starts at 0
	if !strings.Contains(first.Key, "/00000000000000000000-") || first.Size == 0 || first.Size > 16384 {
		t.Fatalf("first segment object %s, %d bytes", first.Key, first.Size)
	}
	obj, err := srv.Client.GetObject(ctx, srv.Bucket, first.Key, miniogo.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := io.ReadAll(obj)
	obj.Close()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := fetchRaw(ctx, cl, "tiered", id, 0, 0, time.Second)
	if err != nil || raw.ErrorCode != 0 || len(raw.RecordBatches) == 0 {
		t.Fatalf("cold raw fetch: %v %+v", err, raw)
	}
	if !bytes.HasPrefix(stored, raw.RecordBatches) && !bytes.HasPrefix(raw.RecordBatches, stored) {
		t.Fatal("cold fetch bytes differ from the segment object")
	}

	checkConsumed(t, b, "tiered", want)

	out := harness.Kcat(t, "-b", b.Addr(), "-C", "-t", "tiered", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%k=%s@%o\n")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want[0]) {
		t.Fatalf("kcat read %d records, produced %d", len(lines), len(want[0]))
	}
	for i, r := range want[0] {
		if exp := fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Offset); lines[i] != exp {
			t.Fatalf("kcat record %d: %.60q, want %.60q", i, lines[i], exp)
		}
	}
	checkConsumedPython(t, b.Addr(), "tiered", want)
}

// pythonReadAll reads every partition of a topic from the beginning with
// kafka-python until it has argv[3] records, one JSON line per record.
const pythonReadAll = `
import json, sys, time
from kafka import KafkaConsumer, TopicPartition

addr, topic, expect = sys.argv[1], sys.argv[2], int(sys.argv[3])
consumer = KafkaConsumer(bootstrap_servers=addr, group_id=None, enable_auto_commit=False,
                         auto_offset_reset='earliest', consumer_timeout_ms=1000)
parts = consumer.partitions_for_topic(topic) or set()
consumer.assign([TopicPartition(topic, p) for p in sorted(parts)])
consumer.seek_to_beginning()
n, deadline = 0, time.time() + 40
while n < expect and time.time() < deadline:
    for records in consumer.poll(timeout_ms=500).values():
        for r in records:
            print(json.dumps({'p': r.partition, 'o': r.offset, 'k': (r.key or b'').decode(), 'v': r.value.decode()}))
            n += 1
consumer.close()
`

// checkConsumedPython reads the topic from offset 0 with kafka-python and
// compares every record with what was produced (uncompressed).
func checkConsumedPython(t *testing.T, addr, topic string, want map[int32][]*kgo.Record) {
	t.Helper()
	total := 0
	for _, recs := range want {
		total += len(recs)
	}
	out := harness.Python(t, pythonReadAll, addr, topic, strconv.Itoa(total))
	got := map[int32][]string{}
	for line := range strings.Lines(out) {
		var r struct {
			P int32  `json:"p"`
			O int64  `json:"o"`
			K string `json:"k"`
			V string `json:"v"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("kafka-python output line %.80q: %v", line, err)
		}
		got[r.P] = append(got[r.P], fmt.Sprintf("%d:%s=%s", r.O, r.K, r.V))
	}
	for p, recs := range want {
		if len(got[p]) != len(recs) {
			t.Fatalf("kafka-python read %d records from %s/%d, produced %d", len(got[p]), topic, p, len(recs))
		}
		for i, r := range recs {
			if exp := fmt.Sprintf("%d:%s=%s", r.Offset, r.Key, r.Value); got[p][i] != exp {
				t.Fatalf("kafka-python record %d of %s/%d: %.60q, want %.60q", i, topic, p, got[p][i], exp)
			}
		}
	}
}

// TestTieredStorageLocalDir is the same round trip on the local-directory
// backend (the zero-setup default).
func TestTieredStorageLocalDir(t *testing.T) {
	b := harness.Start(t, fastTiering)
	harness.CreateTopic(t, b.Admin(), "tiered-local", 1, tieredTopic)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	want := produceTiered(t, cl, "tiered-local", 1, 800)
	waitTiered(t, b, cl, "tiered-local", 1)
	objs, err := filepath.Glob(filepath.Join(b.Dir(), "tier-store", "objects", "tiered-local-*", "0", "*.log"))
	if err != nil || len(objs) < 3 {
		t.Fatalf("%d segment objects in the local store: %v", len(objs), err)
	}
	checkConsumed(t, b, "tiered-local", want)

	// A timestamp look-up answered from the tier's time index.
	recs := want[0]
	target := recs[len(recs)/4].Timestamp.UnixMilli()
	first := slices.IndexFunc(recs, func(r *kgo.Record) bool { return r.Timestamp.UnixMilli() >= target })
	if int64(first) >= listOffset(t, cl, "tiered-local", 0, -4) {
		t.Fatalf("record %d is not tiered", first)
	}
	if got := listOffset(t, cl, "tiered-local", 0, target); got != int64(first) {
		t.Fatalf("offset for timestamp %d: %d, want %d", target, got, first)
	}
	if _, err := os.Stat(filepath.Join(b.Dir(), "remote-log-cache")); err != nil {
		t.Fatalf("chunk cache dir: %v", err)
	}
}

// bucketKeys lists the keys under prefix in srv's bucket.
func bucketKeys(t *testing.T, srv *minio.Server, prefix string) []string {
	t.Helper()
	var keys []string
	for o := range srv.Client.ListObjects(testCtx(t), srv.Bucket, miniogo.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatalf("list %s: %v", prefix, o.Err)
		}
		keys = append(keys, o.Key)
	}
	return keys
}

// etcdCount counts the keys under the broker's etcd prefix + key.
func etcdCount(t *testing.T, cli *clientv3.Client, key string) int64 {
	t.Helper()
	resp, err := cli.Get(testCtx(t), "/strata/"+key, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("etcd get %s: %v", key, err)
	}
	return resp.Count
}

// TestTieredDeleteTopicCleansBucket: two brokers tier a topic to MinIO;
// the leader of partition 0 is down when the topic is deleted through the
// other broker. Every object under the topic's prefix and every remote
// segment record in etcd still goes away, the deleted-topic marker too,
// and nothing comes back when the stopped broker returns. A re-created
// topic of the same name tiers under a new prefix.
func TestTieredDeleteTopicCleansBucket(t *testing.T) {
	srv := minio.Start(t)
	etcd := harness.StartEtcd(t)
	var bs []*harness.Broker
	for id := 1; id <= 2; id++ {
		cfg := minioTiering(srv)
		cfg["node.id"] = strconv.Itoa(id)
		cfg["metadata.etcd.endpoints"] = etcd.Endpoint()
		cfg["broker.session.timeout.ms"] = "3000"
		bs = append(bs, harness.Start(t, cfg))
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.Endpoint()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	adm := bs[0].Admin()
	id := harness.CreateTopic(t, adm, "doomed", 2, tieredTopic)
	cl := harness.NewClient(t, bs[0].Addr(), append([]kgo.Opt{kgo.SeedBrokers(bs[0].Addr(), bs[1].Addr())}, tieredProducer...)...)
	produceTiered(t, cl, "doomed", 2, 600)
	for p := range int32(2) {
		waitFor(t, fmt.Sprintf("doomed/%d tiered", p), func() bool { return listOffset(t, cl, "doomed", p, -5) > 0 })
	}
	prefix := fmt.Sprintf("doomed-%x/", [16]byte(id))
	remoteKeys := fmt.Sprintf("remote/%x/", [16]byte(id))
	if n := len(bucketKeys(t, srv, prefix)); n < 10 {
		t.Fatalf("%d objects under %s", n, prefix)
	}
	if etcdCount(t, cli, remoteKeys) == 0 {
		t.Fatal("no remote segment records in etcd")
	}

	leader := topicDetail(t, adm, "doomed").Partitions[0].Leader
	down, up := bs[leader-1], bs[2-leader]
	down.Stop()
	resp, err := up.Admin().DeleteTopic(testCtx(t), "doomed")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("delete topic: %v", err)
	}
	marker := fmt.Sprintf("deleted-topics/%x", [16]byte(id))
	waitFor(t, "the bucket prefix, the remote records and the marker to be gone", func() bool {
		return len(bucketKeys(t, srv, prefix)) == 0 && etcdCount(t, cli, remoteKeys) == 0 && etcdCount(t, cli, marker) == 0
	})

	down.Restart()
	again := harness.CreateTopic(t, up.Admin(), "doomed", 1, tieredTopic)
	if again == id {
		t.Fatal("re-created topic kept its id")
	}
	cl2 := harness.NewClient(t, up.Addr(), append([]kgo.Opt{kgo.SeedBrokers(bs[0].Addr(), bs[1].Addr())}, tieredProducer...)...)
	want := produceTiered(t, cl2, "doomed", 1, 400)
	waitFor(t, "the re-created topic tiered", func() bool { return listOffset(t, cl2, "doomed", 0, -5) > 0 })
	if keys := bucketKeys(t, srv, prefix); len(keys) != 0 {
		t.Fatalf("objects of the deleted incarnation came back: %v", keys[:min(3, len(keys))])
	}
	if len(bucketKeys(t, srv, fmt.Sprintf("doomed-%x/", [16]byte(again)))) == 0 {
		t.Fatal("the re-created topic has no objects")
	}
	got := harness.ReadAll(t, up.Addr(), "doomed")
	checkPartition(t, "doomed", 0, want[0], got[0])
}
