package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/test/harness"
)

// racks are the racks of brokers 1, 2 and 3 in the fetch-from-follower
// tests.
var racks = []string{"a", "b", "c"}

// startRackCluster runs three brokers (ids 1..3 in racks a, b, c) on one
// real etcd with the rack-aware replica selector and a metrics listener
// each; it returns the brokers and their metrics addresses.
func startRackCluster(t *testing.T) ([]*harness.Broker, []string) {
	t.Helper()
	etcd := harness.StartEtcd(t)
	var bs []*harness.Broker
	var metrics []string
	for i, rack := range racks {
		addr := "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
		bs = append(bs, harness.Start(t, map[string]string{
			"node.id":                   strconv.Itoa(i + 1),
			"broker.rack":               rack,
			"replica.selector.class":    config.RackAwareReplicaSelector,
			"metadata.etcd.endpoints":   etcd.Endpoint(),
			"broker.session.timeout.ms": "3000",
			"metrics.listener":          addr,
		}))
		metrics = append(metrics, addr)
	}
	return bs, metrics
}

// createAssigned creates a one-partition topic on the given replicas (the
// first leads) and returns its id.
func createAssigned(t *testing.T, cl *kgo.Client, topic string, replicas ...int32) kadm.TopicID {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	return resp.Topics[0].TopicID
}

// batchOrigins counts, per broker, the record batches a client read
// (franz-go's HookFetchBatchRead names the broker that served them).
type batchOrigins struct {
	mu sync.Mutex
	by map[int32]int
}

// OnFetchBatchRead implements kgo.HookFetchBatchRead.
func (o *batchOrigins) OnFetchBatchRead(meta kgo.BrokerMetadata, _ string, _ int32, _ kgo.FetchBatchMetrics) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.by == nil {
		o.by = map[int32]int{}
	}
	o.by[meta.NodeID]++
}

func (o *batchOrigins) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return fmt.Sprint(o.by)
}

// only reports whether every batch came from broker id.
func (o *batchOrigins) only(id int32) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.by) == 1 && o.by[id] > 0
}

// consumeAll reads n records of topic from the start with a client seeded
// at b, checks they are the produced ones in order, and returns which
// brokers served the batches.
func consumeAll(t *testing.T, b *harness.Broker, topic string, n int, opts ...kgo.Opt) *batchOrigins {
	t.Helper()
	origins := &batchOrigins{}
	opts = append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(origins))
	cl := b.Client(opts...)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records (batches by broker %s): %v", len(got), n, origins, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	if len(got) != n {
		t.Fatalf("consumed %d records, want %d", len(got), n)
	}
	for i, r := range got {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("value-%d", i) {
			t.Fatalf("record %d: offset %d value %q", i, r.Offset, r.Value)
		}
	}
	return origins
}

// fetchOne sends one Fetch for topic/0 at offset straight to broker id,
// from a consumer in rack, and returns the partition's answer.
func fetchOne(t *testing.T, cl *kgo.Client, id int32, topic string, topicID kadm.TopicID, rack string, epoch int32, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 100, 1, 1<<20, -1
	req.Rack = rack
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, offset, 1<<20, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := cl.Broker(int(id)).Request(testCtx(t), req)
	if err != nil {
		t.Fatalf("fetch from broker %d: %v", id, err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch from broker %d: %d topics in the answer", id, len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// TestFetchFromFollower (KIP-392): with brokers in racks a, b, c and the
// rack-aware selector, a consumer in rack b reads a partition led in rack
// a from the rack-b follower (every batch, checked with franz-go's hooks,
// and kcat's reads counted by broker 2's bytes-out metric); consumers with
// no rack or the leader's rack read from the leader. The follower answers
// consumers with the leader epoch check, OFFSET_OUT_OF_RANGE past its log,
// NOT_LEADER_OR_FOLLOWER to pre-v11 fetches and ListOffsets, and a broker
// that is no replica refuses.
func TestFetchFromFollower(t *testing.T) {
	bs, metrics := startRackCluster(t)
	const topic, n = "ffr", 500
	cl := bs[0].Client(kgo.SeedBrokers(seeds(bs)...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	topicID := createAssigned(t, cl, topic, 1, 2, 3)
	other := createAssigned(t, cl, topic+"-12", 1, 2)
	adm := kadm.NewClient(cl)
	waitFullISR(t, adm, topic, 3)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: fmt.Appendf(nil, "value-%d", i)}
	}
	produceSync(t, cl, recs...)
	waitFullISR(t, adm, topic, 3)
	md, err := adm.Metadata(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range md.Brokers {
		if b.Rack == nil || *b.Rack != racks[b.NodeID-1] {
			t.Fatalf("metadata gives broker %d rack %v, want %s", b.NodeID, b.Rack, racks[b.NodeID-1])
		}
	}
	part := md.Topics[topic].Partitions[0]
	if part.Leader != 1 {
		t.Fatalf("leader %d, want 1", part.Leader)
	}
	epoch := part.LeaderEpoch
	// Followers learn the high watermark from the leader's fetch answers.
	for _, id := range []int32{2, 3} {
		waitUntil(t, fmt.Sprintf("broker %d's high watermark at %d", id, n), 10*time.Second, func() bool {
			sp := fetchOne(t, cl, id, topic, topicID, "", epoch, n)
			return sp.ErrorCode == 0 && sp.HighWatermark == n
		})
	}

	t.Run("protocol", func(t *testing.T) {
		// The leader redirects a rack-b consumer, without records.
		sp := fetchOne(t, cl, 1, topic, topicID, "b", epoch, 0)
		if sp.ErrorCode != 0 || sp.PreferredReadReplica != 2 || len(sp.RecordBatches) != 0 || sp.HighWatermark != n {
			t.Fatalf("leader to rack b: error %d, preferred %d, %d record bytes, hw %d; want 0, 2, none, %d",
				sp.ErrorCode, sp.PreferredReadReplica, len(sp.RecordBatches), sp.HighWatermark, n)
		}
		for _, rack := range []string{"", "a", "z"} {
			sp := fetchOne(t, cl, 1, topic, topicID, rack, epoch, 0)
			if sp.ErrorCode != 0 || sp.PreferredReadReplica != -1 || len(sp.RecordBatches) == 0 {
				t.Fatalf("leader to rack %q: error %d, preferred %d, %d record bytes; want records from the leader",
					rack, sp.ErrorCode, sp.PreferredReadReplica, len(sp.RecordBatches))
			}
		}
		// The follower serves v11+ consumers.
		sp = fetchOne(t, cl, 2, topic, topicID, "b", epoch, 0)
		if sp.ErrorCode != 0 || sp.PreferredReadReplica != -1 || len(sp.RecordBatches) == 0 {
			t.Fatalf("follower: error %d, preferred %d, %d record bytes; want records", sp.ErrorCode, sp.PreferredReadReplica, len(sp.RecordBatches))
		}
		for _, tc := range []struct {
			what   string
			id     int32
			topic  string
			tid    kadm.TopicID
			epoch  int32
			offset int64
			want   error
		}{
			{"a newer leader epoch", 2, topic, topicID, epoch + 1, 0, kerr.UnknownLeaderEpoch},
			{"past the log end", 2, topic, topicID, epoch, n + 100, kerr.OffsetOutOfRange},
			{"no replica there", 3, topic + "-12", other, -1, 0, kerr.NotLeaderForPartition},
		} {
			sp := fetchOne(t, cl, tc.id, tc.topic, tc.tid, "b", tc.epoch, tc.offset)
			if err := kerr.ErrorForCode(sp.ErrorCode); err != tc.want {
				t.Errorf("%s: %v, want %v", tc.what, err, tc.want)
			}
		}
		if epoch > 0 {
			if sp := fetchOne(t, cl, 2, topic, topicID, "b", epoch-1, 0); sp.ErrorCode != kerr.FencedLeaderEpoch.Code {
				t.Errorf("an older leader epoch: %v, want FENCED_LEADER_EPOCH", kerr.ErrorForCode(sp.ErrorCode))
			}
		}
		// Before v11 a consumer cannot be redirected: followers refuse it.
		old := harness.NewClient(t, bs[0].Addr(), kgo.MaxVersions(kversion.V2_2_0()))
		if sp := fetchOne(t, old, 2, topic, topicID, "", -1, 0); sp.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Errorf("v10 fetch to the follower: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(sp.ErrorCode))
		}
		// ListOffsets stays leader-only.
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.ReplicaID = -1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = 0, -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		kresp, err := cl.Broker(2).Request(testCtx(t), lo)
		if err != nil {
			t.Fatal(err)
		}
		if code := kresp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
			t.Errorf("ListOffsets to the follower: %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
		}
	})

	t.Run("kgo", func(t *testing.T) {
		for _, tc := range []struct {
			rack string
			from int32
		}{{"b", 2}, {"c", 3}, {"a", 1}, {"", 1}} {
			var opts []kgo.Opt
			if tc.rack != "" {
				opts = append(opts, kgo.Rack(tc.rack))
			}
			o := consumeAll(t, bs[0], topic, n, opts...)
			if !o.only(tc.from) {
				t.Errorf("rack %q: batches by broker %s, want all from broker %d", tc.rack, o, tc.from)
			}
			t.Logf("rack %q: batches by broker %s", tc.rack, o)
		}
	})

	t.Run("kcat", func(t *testing.T) {
		outBytes := func(i int) float64 { return scrape(t, metrics[i])[`strata_bytes_out_total{topic="`+topic+`"}`] }
		before := outBytes(1)
		out := harness.Kcat(t, "-b", bs[0].Addr(), "-X", "client.rack=b", "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%o %s\n")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != n {
			t.Fatalf("kcat consumed %d records, want %d", len(lines), n)
		}
		for i, l := range lines {
			if want := fmt.Sprintf("%d value-%d", i, i); l != want {
				t.Fatalf("kcat line %d: %q, want %q", i, l, want)
			}
		}
		logSize := float64(len(logBytes(t, bs[1], topic, 0)))
		if got := outBytes(1) - before; got < logSize {
			t.Errorf("broker 2 served kcat %.0f bytes, want the whole log (%.0f)", got, logSize)
		}
	})

	// A rack-b consumer tails records produced one by one while it reads:
	// the follower's long-poll wakes as its high watermark moves.
	t.Run("tail", func(t *testing.T) {
		const more = 100
		done := make(chan error, 1)
		go func() {
			for i := n; i < n+more; i++ {
				r := &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: fmt.Appendf(nil, "value-%d", i)}
				if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
					done <- fmt.Errorf("produce %d: %w", i, err)
					return
				}
			}
			done <- nil
		}()
		o := consumeAll(t, bs[0], topic, n+more, kgo.Rack("b"))
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !o.only(2) {
			t.Errorf("batches by broker %s, want all from broker 2", o)
		}
		t.Logf("batches by broker %s", o)
	})
}
