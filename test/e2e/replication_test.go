package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// startCluster runs n in-process brokers (node ids 1..n) on one real etcd.
func startCluster(t *testing.T, n int, extra map[string]string) []*harness.Broker {
	t.Helper()
	return startClusterWith(t, n, func(int) map[string]string { return extra })
}

// startClusterWith is startCluster with each broker's extra keys given by
// extra(id).
func startClusterWith(t *testing.T, n int, extra func(id int) map[string]string) []*harness.Broker {
	t.Helper()
	etcd := harness.StartEtcd(t)
	var bs []*harness.Broker
	for id := 1; id <= n; id++ {
		cfg := map[string]string{
			"node.id":                   strconv.Itoa(id),
			"metadata.etcd.endpoints":   etcd.Endpoint(),
			"broker.session.timeout.ms": "3000",
		}
		for k, v := range extra(id) {
			cfg[k] = v
		}
		bs = append(bs, harness.Start(t, cfg))
	}
	// Topic creation checks the replication factor against the brokers
	// the receiving broker knows: wait until each knows all n (asking
	// each directly; an admin client answers from its own cached list).
	cl := harness.NewClient(t, bs[0].Addr())
	for id := 1; id <= n; id++ {
		waitUntil(t, fmt.Sprintf("broker %d to know all %d brokers", id, n), 20*time.Second, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := cl.Broker(id).Request(ctx, kmsg.NewPtrMetadataRequest())
			return err == nil && len(resp.(*kmsg.MetadataResponse).Brokers) == n
		})
	}
	return bs
}

// isr returns each partition's ISR as the cluster's metadata says.
func isr(t *testing.T, adm *kadm.Client, topic string) map[int32][]int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32][]int32{}
	for _, p := range md.Topics[topic].Partitions {
		s := slices.Clone(p.ISR)
		slices.Sort(s)
		out[p.Partition] = s
	}
	return out
}

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logBytes reads a partition's .log files in one broker's data dir.
func logBytes(t *testing.T, b *harness.Broker, topic string, p int32) []byte {
	t.Helper()
	dir := filepath.Join(b.Dir(), fmt.Sprintf("%s-%d", topic, p))
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	slices.Sort(files)
	var out []byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil
		}
		out = append(out, data...)
	}
	return out
}

// TestReplicationRF3 runs three brokers: acks=all produces complete once
// every ISR member has the data, all replicas end byte-identical, a
// stopped follower leaves the ISR after replica.lag.time.max.ms while
// produces go on (min.insync.replicas=2), and rejoins once caught up.
func TestReplicationRF3(t *testing.T) {
	bs := startCluster(t, 3, map[string]string{"replica.lag.time.max.ms": "2000"})
	adm := bs[0].Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "repl"
	resp, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	cl := bs[0].Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			r := &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: fmt.Appendf(nil, "value-%d", i)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", i, err)
			}
		}
	}
	produce(0, 300)
	identical := func(brokers []*harness.Broker) bool { return replicasIdentical(t, brokers, topic, 3) }
	waitUntil(t, "three identical replicas", 20*time.Second, func() bool { return identical(bs) })
	if got := countRecords(harness.ReadAll(t, bs[1].Addr(), topic)); got != 300 {
		t.Fatalf("read %d records, want 300", got)
	}

	// A follower goes away: it leaves the ISR, acks=all keeps working with 2.
	follower := bs[2]
	follower.Stop()
	waitUntil(t, "ISR without broker 3", 20*time.Second, func() bool {
		for _, s := range isr(t, adm, topic) {
			if slices.Contains(s, 3) {
				return false
			}
		}
		return true
	})
	produce(300, 600)
	follower.Restart()
	waitUntil(t, "broker 3 back in every ISR", 30*time.Second, func() bool {
		for _, s := range isr(t, adm, topic) {
			if !slices.Contains(s, 3) {
				return false
			}
		}
		return true
	})
	waitUntil(t, "identical replicas after catch-up", 20*time.Second, func() bool { return identical(bs) })
	if got := countRecords(harness.ReadAll(t, bs[0].Addr(), topic)); got != 600 {
		t.Fatalf("read %d records, want 600", got)
	}
}

// replicasIdentical reports whether the logs of partitions [0, n) of topic
// are byte-identical on brokers.
func replicasIdentical(t *testing.T, brokers []*harness.Broker, topic string, n int32) bool {
	for p := range n {
		first := logBytes(t, brokers[0], topic, p)
		for _, b := range brokers[1:] {
			if !bytes.Equal(first, logBytes(t, b, topic, p)) {
				return false
			}
		}
	}
	return true
}

// TestReplicaFetchersAndFetchSize: with num.replica.fetchers=2 a follower
// spreads each leader's partitions over two fetch loops, and with
// replica.fetch.max.bytes=1 every fetch still brings one whole batch
// (KIP-74); acks=all with min.insync.replicas=3 completes and the replicas
// end byte-identical.
func TestReplicaFetchersAndFetchSize(t *testing.T) {
	bs := startCluster(t, 3, map[string]string{"num.replica.fetchers": "2", "replica.fetch.max.bytes": "1"})
	adm := bs[0].Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic, parts = "fetchers", 6
	resp, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("3")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	cl := bs[0].Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 60 {
		r := &kgo.Record{Partition: int32(i % parts), Value: fmt.Appendf(nil, "value-%d", i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	waitUntil(t, "identical replicas", 20*time.Second, func() bool { return replicasIdentical(t, bs, topic, parts) })
	if got := countRecords(harness.ReadAll(t, bs[1].Addr(), topic)); got != 60 {
		t.Fatalf("read %d records, want 60", got)
	}
}

func countRecords(m map[int32][]*kgo.Record) int {
	n := 0
	for _, rs := range m {
		n += len(rs)
	}
	return n
}

// A topic created while the followers' fetches wait at their leaders (here
// up to 20 s, replica.fetch.wait.max.ms) does not wait for those long
// polls: a follower cuts its fetch short when its partitions change, so
// acks=all produces to the new topic complete in well under the 20 s that
// waiting out the polls takes (the bound, 10 s, is only a deadline).
func TestNewTopicDoesNotWaitForParkedReplicaFetches(t *testing.T) {
	bs := startCluster(t, 3, map[string]string{"replica.fetch.wait.max.ms": "20000"})
	adm := bs[0].Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	produce := func(topic string) {
		t.Helper()
		resp, err := adm.CreateTopic(ctx, 3, 3, nil, topic)
		if err != nil || resp.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, resp.Err)
		}
		cl := bs[0].Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		defer cl.Close()
		for p := range int32(3) {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatalf("acks=all produce to %s-%d: %v", topic, p, err)
			}
		}
	}
	produce("first") // every follower now has a fetch parked at each leader
	start := time.Now()
	produce("second") // whose partitions the new topic's do not join
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("acks=all produces to the new topic took %v: they waited for the parked fetches", d)
	}
}

// TestDeleteRecordsRF3: DeleteRecords on a partition with three replicas
// answers once every replica's log start reached the offset (Kafka's
// low watermark): the followers take the leader's log start from their
// fetches and report theirs back.
func TestDeleteRecordsRF3(t *testing.T) {
	bs := startCluster(t, 3, nil)
	adm := bs[0].Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "purge"
	resp, err := adm.CreateTopic(ctx, 1, 3, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	cl := bs[0].Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 100 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "value-%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	var to kadm.Offsets
	to.Add(kadm.Offset{Topic: topic, Partition: 0, At: 60})
	dr, err := adm.DeleteRecords(ctx, to)
	if err == nil {
		err = dr.Error()
	}
	if err != nil {
		t.Fatalf("delete records: %v", err)
	}
	if r, _ := dr.Lookup(topic, 0); r.LowWatermark != 60 {
		t.Fatalf("low watermark %d, want 60", r.LowWatermark)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup(topic, 0); o.Offset != 60 {
		t.Fatalf("log start %d, want 60", o.Offset)
	}
}
