package perf

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newCluster starts a one-broker kfake cluster on loopback for one test.
func newCluster(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestProduceThenConsume(t *testing.T) {
	brokers := newCluster(t)
	ctx := testContext(t)
	p, err := Produce(ctx, ProduceOptions{
		Brokers: brokers, Topic: "t", RecordSize: 100, Records: 3000, Partitions: 3, Concurrency: 2,
	})
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	if p.Records != 3000 || p.Bytes != 300000 || p.Op != "produce" {
		t.Fatalf("produce result %+v", p)
	}
	if p.LatencyP50 <= 0 || p.LatencyP99 < p.LatencyP50 || p.LatencyMax < p.LatencyP99 || p.Elapsed <= 0 {
		t.Fatalf("latencies %+v", p)
	}
	if p.MBPerSec() <= 0 || p.RecordsPerSec() <= 0 {
		t.Fatalf("rates %f %f", p.MBPerSec(), p.RecordsPerSec())
	}
	if s := p.String(); !strings.HasPrefix(s, "produce: 3000 records") || !strings.Contains(s, "p99") {
		t.Fatalf("String() = %q", s)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(ctx, "t")
	if err != nil || len(td["t"].Partitions) != 3 {
		t.Fatalf("topic t: %v partitions, err %v", len(td["t"].Partitions), err)
	}
	if n, err := CountRecords(ctx, brokers, "t"); err != nil || n != 3000 {
		t.Fatalf("CountRecords = %d, %v", n, err)
	}

	c, err := Consume(ctx, ConsumeOptions{Brokers: brokers, Topic: "t"})
	if err != nil {
		t.Fatalf("consume: %v", err)
	}
	if c.Records != 3000 || c.Bytes != 300000 {
		t.Fatalf("consume result %+v", c)
	}
	if s := c.String(); !strings.HasPrefix(s, "consume: 3000 records") || strings.Contains(s, "p99") {
		t.Fatalf("String() = %q", s)
	}

	// A second produce reuses the existing topic.
	if _, err := Produce(ctx, ProduceOptions{Brokers: brokers, Topic: "t", Records: 10, Partitions: 5}); err != nil {
		t.Fatalf("produce to existing topic: %v", err)
	}
	if n, _ := CountRecords(ctx, brokers, "t"); n != 3010 {
		t.Fatalf("after second produce: %d records", n)
	}
	c, err = Consume(ctx, ConsumeOptions{Brokers: brokers, Topic: "t", Records: 50})
	if err != nil || c.Records < 50 {
		t.Fatalf("bounded consume: %+v, %v", c, err)
	}
}

func TestProduceDurationBound(t *testing.T) {
	brokers := newCluster(t)
	p, err := Produce(testContext(t), ProduceOptions{Brokers: brokers, RecordSize: 10, Duration: 200 * time.Millisecond, Linger: -1})
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	if p.Records == 0 || p.Elapsed < 200*time.Millisecond {
		t.Fatalf("duration-bound run: %+v", p)
	}
}

func TestProduceThrottled(t *testing.T) {
	brokers := newCluster(t)
	p, err := Produce(testContext(t), ProduceOptions{Brokers: brokers, Records: 21, Throughput: 200, Concurrency: 1})
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	// Record 20 is due 100 ms after the start; timers never fire early.
	if p.Records != 21 || p.Elapsed < 100*time.Millisecond {
		t.Fatalf("throttled run: %+v", p)
	}
}

func TestConsumeDurationBoundShortRead(t *testing.T) {
	brokers := newCluster(t)
	ctx := testContext(t)
	if _, err := Produce(ctx, ProduceOptions{Brokers: brokers, Topic: "s", Records: 5}); err != nil {
		t.Fatal(err)
	}
	c, err := Consume(ctx, ConsumeOptions{Brokers: brokers, Topic: "s", Records: 10, Duration: 300 * time.Millisecond})
	if err != nil || c.Records != 5 {
		t.Fatalf("short read: %+v, %v", c, err)
	}
}

func TestConsumeEmptyTopic(t *testing.T) {
	brokers := newCluster(t)
	ctx := testContext(t)
	if err := EnsureTopic(ctx, brokers, "empty", 2, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := Consume(ctx, ConsumeOptions{Brokers: brokers, Topic: "empty"}); !errors.Is(err, ErrEmptyTopic) {
		t.Fatalf("err = %v, want ErrEmptyTopic", err)
	}
}

func TestBadOptions(t *testing.T) {
	ctx := testContext(t)
	for _, o := range []ProduceOptions{
		{},
		{Brokers: []string{"127.0.0.1:1"}, RecordSize: -1},
		{Brokers: []string{"127.0.0.1:1"}, Records: -1},
		{Brokers: []string{"127.0.0.1:1"}, Concurrency: -2},
		{Brokers: []string{"127.0.0.1:1"}, Throughput: -1},
		{Brokers: []string{"127.0.0.1:1"}, Compression: "brotli"},
	} {
		if _, err := Produce(ctx, o); !errors.Is(err, ErrOptions) {
			t.Errorf("Produce(%+v) err = %v, want ErrOptions", o, err)
		}
	}
	if _, err := Consume(ctx, ConsumeOptions{Brokers: []string{"127.0.0.1:1"}, Duration: -1}); !errors.Is(err, ErrOptions) {
		t.Errorf("Consume err = %v, want ErrOptions", err)
	}
}

// TestProduceCompressed produces lz4 batches whose values compress about
// 2:1 and reads them back.
func TestProduceCompressed(t *testing.T) {
	brokers := newCluster(t)
	ctx := testContext(t)
	if _, err := Produce(ctx, ProduceOptions{Brokers: brokers, Topic: "z", RecordSize: 1024, Records: 500, Compression: "lz4"}); err != nil {
		t.Fatalf("produce: %v", err)
	}
	if c, err := Consume(ctx, ConsumeOptions{Brokers: brokers, Topic: "z"}); err != nil || c.Records != 500 {
		t.Fatalf("consume: %+v, %v", c, err)
	}
	values := recordValues(1024, "zstd")
	if len(values) != 256 || bytes.Equal(values[0], values[1]) {
		t.Fatalf("%d values, the first two equal", len(values))
	}
	for _, v := range values {
		if len(v) != 1024 || !bytes.Equal(v[:512], v[512:]) {
			t.Fatalf("value of %d bytes does not repeat its half", len(v))
		}
	}
	if len(recordValues(1024, "none")) != 1 {
		t.Fatal("uncompressed runs use one random value")
	}
}

func TestProduceUnreachableBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	// Port 1 on loopback refuses connections.
	if _, err := Produce(ctx, ProduceOptions{Brokers: []string{"127.0.0.1:1"}, Records: 1}); err == nil {
		t.Fatal("produce to an unreachable broker succeeded")
	}
}

func TestCommand(t *testing.T) {
	brokers := newCluster(t)
	ctx := testContext(t)
	var out, errOut bytes.Buffer
	b := strings.Join(brokers, ",")
	if err := Command(ctx, []string{"produce", "--brokers", b, "-topic", "c", "-records", "500", "-record-size", "64", "-partitions", "2"}, &out, &errOut); err != nil {
		t.Fatalf("produce: %v (stderr %s)", err, errOut.String())
	}
	if err := Command(ctx, []string{"consume", "-brokers", b, "-topic", "c"}, &out, &errOut); err != nil {
		t.Fatalf("consume: %v (stderr %s)", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "produce: 500 records") || !strings.HasPrefix(lines[1], "consume: 500 records") {
		t.Fatalf("output %q", out.String())
	}
	for _, args := range [][]string{nil, {"bogus"}, {"produce", "-nope"}, {"consume", "extra"}} {
		if err := Command(ctx, args, &out, &errOut); !errors.Is(err, ErrOptions) {
			t.Errorf("Command(%q) err = %v, want ErrOptions", args, err)
		}
	}
	if err := Command(ctx, []string{"produce", "-h"}, &out, &errOut); err != nil {
		t.Errorf("-h: %v", err)
	}
}

func TestSplitBrokers(t *testing.T) {
	got := splitBrokers(" a:1, ,b:2,")
	if len(got) != 2 || got[0] != "a:1" || got[1] != "b:2" {
		t.Fatalf("splitBrokers = %q", got)
	}
}

func TestProduceTransactional(t *testing.T) {
	brokers := newCluster(t)
	ctx := testContext(t)
	res, err := Produce(ctx, ProduceOptions{Brokers: brokers, Topic: "tx", RecordSize: 64, Records: 1000, Partitions: 2,
		Concurrency: 2, TransactionalID: "perf-test", CommitEvery: 100})
	if err != nil || res.Records != 1000 {
		t.Fatalf("produce: %+v, %v", res, err)
	}
	// Each client commits every 100 records it issued, and its tail.
	if res.Txns < 10 || res.Txns > 12 || res.EndTxnP99 <= 0 || !strings.Contains(res.String(), "transactions") {
		t.Fatalf("transactions: %d, p99 %v, %s", res.Txns, res.EndTxnP99, res)
	}
	if c, err := Consume(ctx, ConsumeOptions{Brokers: brokers, Topic: "tx", Records: 1000, ReadCommitted: true}); err != nil || c.Records != 1000 {
		t.Fatalf("read_committed consume: %+v, %v", c, err)
	}
	if _, err := Produce(ctx, ProduceOptions{Brokers: brokers, TransactionalID: "x", DisableIdempotence: true}); !errors.Is(err, ErrOptions) {
		t.Fatalf("transactional without idempotence: %v", err)
	}
}
