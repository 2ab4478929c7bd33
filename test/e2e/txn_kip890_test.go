package e2e

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-broker/strata/test/harness"
)

// TestTxnKIP890: the broker finalizes transaction.version 2, so franz-go
// runs its transactions the KIP-890 part 2 way (no AddPartitionsToTxn:
// the partition leaders add the partitions; every EndTxn bumps the
// epoch), and a read_committed consumer reads exactly the committed
// records. A hanging-transaction attempt (part 1): a transactional
// produce of an older client to a partition its transaction never added
// is refused, leaving nothing for read_committed and the last stable
// offset at the high watermark.
func TestTxnKIP890(t *testing.T) {
	b := harness.Start(t, map[string]string{"transaction.state.log.num.partitions": "3"})
	harness.CreateTopic(t, b.Admin(), "kip890", 2, nil)
	ctx := testCtx(t)

	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, b.Client())
	if err != nil {
		t.Fatal(err)
	}
	var tv2 bool
	for _, f := range av.FinalizedFeatures {
		tv2 = tv2 || f.Name == "transaction.version" && f.MinVersionLevel == 2 && f.MaxVersionLevel == 2
	}
	if av.Version < 3 || !tv2 || av.FinalizedFeaturesEpoch < 0 {
		t.Fatalf("ApiVersions v%d finalized %+v (epoch %d): want transaction.version 2", av.Version, av.FinalizedFeatures, av.FinalizedFeaturesEpoch)
	}

	var sent requestKeys
	txnRoundTrip(t, func(opts ...kgo.Opt) *kgo.Client { return b.Client(append(opts, kgo.WithHooks(&sent))...) }, "kip890")
	if n := sent.count(kmsg.AddPartitionsToTxn); n != 0 {
		t.Errorf("franz-go sent %d AddPartitionsToTxn: transaction version 2 was not negotiated", n)
	}
	if sent.count(kmsg.EndTxn) != 3 {
		t.Errorf("%d EndTxn, want 3", sent.count(kmsg.EndTxn))
	}
	described, err := b.Admin().DescribeTransactions(ctx, "strata-txn")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := described["strata-txn"]; !ok || d.ProducerEpoch < 3 {
		t.Errorf("transaction %+v: want the epoch bumped by each of the 3 ends", d)
	}

	hangingTxnRefused(t, b, "kip890-hang")
}

// TestTxnKIP890Cluster is the hanging-transaction attempt on three
// brokers, with a transactional id whose coordinator is not kip890-0's
// leader: the leader verifies over its peer connection (AddPartitionsToTxn
// v5, VerifyOnly).
func TestTxnKIP890Cluster(t *testing.T) {
	bs := startCluster(t, 3, map[string]string{"transaction.state.log.num.partitions": "3"})
	ctx := testCtx(t)
	adm := bs[0].Admin()
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "kip890")
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	leader := topicDetail(t, adm, "kip890").Partitions[0].Leader
	id := ""
	for i := 0; i < 100 && id == ""; i++ {
		cand := fmt.Sprintf("kip890-hang-%d", i)
		if c := adm.FindTxnCoordinators(ctx, cand)[cand]; c.Err == nil && c.NodeID != leader {
			id = cand
		}
	}
	if id == "" {
		t.Fatalf("no transactional id of 100 is coordinated away from broker %d", leader)
	}
	hangingTxnRefused(t, bs[1], id)
}

// hangingTxnRefused initialises transactional producer id and sends, as
// an older client (produce v11, transaction version 0), a transactional
// batch to kip890-0, a partition its transaction never added.
func hangingTxnRefused(t *testing.T, b *harness.Broker, id string) {
	ctx := testCtx(t)
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.Produce.Int16(), 11)
	cl := b.Client(kgo.MaxVersions(versions))
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID = kmsg.StringPtr(id)
	init.TransactionTimeoutMillis = 60000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("init producer id: %v %v", err, kerr.ErrorForCode(ir.ErrorCode))
	}

	before := endOffset(t, b.Admin(), "kip890", 0)
	raw := harness.BuildBatch(harness.BatchSpec{ProducerID: ir.ProducerID, Epoch: ir.ProducerEpoch, FirstTs: time.Now().UnixMilli(),
		Records: []harness.RawRecord{{Value: []byte("hanging")}}})
	transactional(raw)
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr(id), -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "kip890"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, raw
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	pr, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	// Kafka's answer to a produce v11: TRANSACTION_ABORTABLE (older
	// versions get INVALID_TXN_STATE).
	if pr.Version != 11 || len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 || pr.Topics[0].Partitions[0].ErrorCode != kerr.TransactionAbortable.Code {
		t.Fatalf("produce v%d answered %+v; want TRANSACTION_ABORTABLE", pr.Version, pr.Topics)
	}

	// Nothing was appended: the high watermark and the last stable offset
	// agree, and a record produced next is read at once by read_committed.
	if after := endOffset(t, b.Admin(), "kip890", 0); after != before {
		t.Fatalf("high watermark %d after the refused batch, was %d", after, before)
	}
	produceSync(t, b.Client(kgo.DefaultProduceTopic("kip890"), kgo.RecordPartitioner(kgo.ManualPartitioner())),
		&kgo.Record{Partition: 0, Value: []byte("plain")})
	lso, err := b.Admin().ListCommittedOffsets(ctx, "kip890")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := lso.Lookup("kip890", 0); !ok || o.Err != nil || o.Offset != before+1 {
		t.Fatalf("last stable offset %+v, want %d: the refused batch holds it back", o, before+1)
	}
	rc := b.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"kip890": {0: kgo.NewOffset().At(before)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	for ctx.Err() == nil {
		fs := rc.PollFetches(ctx)
		if recs := fs.Records(); len(recs) > 0 {
			if string(recs[0].Value) != "plain" {
				t.Fatalf("read_committed read %q at %d, want the plain record", recs[0].Value, recs[0].Offset)
			}
			return
		}
	}
	t.Fatal("read_committed never read the record after the refused batch")
}

// transactional sets a built batch's transactional attribute and
// recomputes its CRC-32C (over attributes onwards).
func transactional(raw []byte) {
	attrs := binary.BigEndian.Uint16(raw[21:])
	binary.BigEndian.PutUint16(raw[21:], attrs|0x10)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
}

// requestKeys counts the requests a client writes, by key.
type requestKeys struct {
	mu   sync.Mutex
	keys map[int16]int
}

// OnBrokerWrite implements kgo.HookBrokerWrite.
func (r *requestKeys) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = map[int16]int{}
	}
	r.keys[key]++
}

func (r *requestKeys) count(k kmsg.Key) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.keys[k.Int16()]
}
