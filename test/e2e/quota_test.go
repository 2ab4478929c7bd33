package e2e

import (
	"context"
	"crypto/rand"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// quotaConfig makes rates measured over 2 one-second windows, so the
// burst a fresh client gets before its first throttle is short.
var quotaConfig = map[string]string{"quota.window.num": "2", "quota.window.size.seconds": "1"}

// setQuota sets one quota value of the client id with kadm.
func setQuota(t *testing.T, adm *kadm.Client, clientID, key string, value float64) {
	t.Helper()
	res, err := adm.AlterClientQuotas(testCtx(t), []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: kadm.StringPtr(clientID)}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: key, Value: value}},
	}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("alter client quotas: %v %+v", err, res)
	}
}

// meter counts bytes in a window of time: those counted before start or
// after end are left out.
type meter struct {
	start, end time.Time
	n          atomic.Int64
}

func (m *meter) add(n int, at time.Time) {
	if !at.Before(m.start) && at.Before(m.end) {
		m.n.Add(int64(n))
	}
}

func (m *meter) rate() float64 { return float64(m.n.Load()) / m.end.Sub(m.start).Seconds() }

const (
	quotaRate    = 1 << 20 // 1 MiB/s
	quotaWarm    = 3 * time.Second
	quotaMeasure = 10 * time.Second
)

// randomValue is an 8 KiB record value that does not compress.
func randomValue() []byte {
	v := make([]byte, 8<<10)
	_, _ = rand.Read(v)
	return v
}

// TestProduceQuota: a producer whose client id has a producer_byte_rate of
// 1 MiB/s is held within ±15 % of it over a steady 10 s (after its first
// burst), while a producer without a quota on the same broker goes well
// above it at the same time.
func TestProduceQuota(t *testing.T) {
	b, metrics := startMeteredWith(t, quotaConfig)
	adm := b.Admin()
	harness.CreateTopic(t, adm, "quota-produce", 1, nil)
	setQuota(t, adm, "throttled", "producer_byte_rate", quotaRate)

	now := time.Now()
	slow := &meter{start: now.Add(quotaWarm), end: now.Add(quotaWarm + quotaMeasure)}
	fast := &meter{start: slow.start, end: slow.end}
	value := randomValue()
	var wg sync.WaitGroup
	for _, c := range []struct {
		id string
		m  *meter
	}{{"throttled", slow}, {"free", fast}} {
		cl := b.Client(kgo.ClientID(c.id), kgo.DefaultProduceTopic("quota-produce"),
			kgo.ProducerBatchMaxBytes(64<<10), kgo.MaxBufferedRecords(64), kgo.ProducerLinger(0),
			kgo.ProducerBatchCompression(kgo.NoCompression())) // the quota counts bytes on the wire
		wg.Go(func() {
			ctx, cancel := context.WithDeadline(context.Background(), c.m.end)
			defer cancel()
			for i := 0; ctx.Err() == nil && i < 1e7; i++ {
				cl.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
					if err == nil {
						c.m.add(len(r.Value), time.Now())
					}
				})
			}
			_ = cl.Flush(context.Background())
		})
	}
	wg.Wait()
	got := slow.rate()
	t.Logf("throttled producer: %.0f B/s (quota %d); free producer: %.0f B/s", got, quotaRate, fast.rate())
	if got < 0.85*quotaRate || got > 1.15*quotaRate {
		t.Errorf("throttled producer at %.0f B/s, want %d ± 15 %%", got, quotaRate)
	}
	if fast.rate() < 3*quotaRate {
		t.Errorf("free producer at %.0f B/s, want well above the quota", fast.rate())
	}
	if n := metricValue(t, metrics, `strata_quota_throttled_total{type="produce"}`); n < 1 {
		t.Errorf("strata_quota_throttled_total{type=\"produce\"} = %d", n)
	}
}

// TestFetchQuota: a consumer whose client id has a consumer_byte_rate of
// 1 MiB/s is held within ±15 % of it over a steady 10 s, while a consumer
// without a quota reads the same topic well above it.
func TestFetchQuota(t *testing.T) {
	b, metrics := startMeteredWith(t, quotaConfig)
	adm := b.Admin()
	const topic = "quota-fetch"
	harness.CreateTopic(t, adm, topic, 1, nil)
	value := randomValue()
	const total = 32 << 20
	p := b.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var recs []*kgo.Record
	for range total / len(value) {
		recs = append(recs, &kgo.Record{Value: value})
	}
	produceSync(t, p, recs...)
	setQuota(t, adm, "throttled", "consumer_byte_rate", quotaRate)

	now := time.Now()
	slow := &meter{start: now.Add(quotaWarm), end: now.Add(quotaWarm + quotaMeasure)}
	var fastBytes atomic.Int64
	var fastTook time.Duration
	var wg sync.WaitGroup
	consume := func(id string, each func(n int) bool) {
		cl := b.Client(kgo.ClientID(id), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxBytes(64<<10), kgo.FetchMaxPartitionBytes(64<<10))
		ctx, cancel := context.WithDeadline(context.Background(), slow.end)
		defer cancel()
		for i := 0; ctx.Err() == nil && i < 1e6; i++ {
			fs := cl.PollFetches(ctx)
			for _, r := range fs.Records() {
				if !each(len(r.Value)) {
					return
				}
			}
		}
	}
	wg.Go(func() {
		consume("throttled", func(n int) bool { slow.add(n, time.Now()); return true })
	})
	wg.Go(func() {
		start := time.Now()
		consume("free", func(n int) bool {
			if fastBytes.Add(int64(n)) >= total {
				fastTook = time.Since(start)
				return false
			}
			return true
		})
	})
	wg.Wait()
	got := slow.rate()
	t.Logf("throttled consumer: %.0f B/s (quota %d); free consumer: %d bytes in %v", got, quotaRate, fastBytes.Load(), fastTook)
	if got < 0.85*quotaRate || got > 1.15*quotaRate {
		t.Errorf("throttled consumer at %.0f B/s, want %d ± 15 %%", got, quotaRate)
	}
	if fastTook == 0 || float64(total)/fastTook.Seconds() < 3*quotaRate {
		t.Errorf("free consumer read %d of %d bytes (in %v), want well above the quota", fastBytes.Load(), total, fastTook)
	}
	if n := metricValue(t, metrics, `strata_quota_throttled_total{type="fetch"}`); n < 1 {
		t.Errorf("strata_quota_throttled_total{type=\"fetch\"} = %d", n)
	}
}

// TestQuotaMutesConnection: after a response with throttle_time_ms, the
// broker does not answer the next request on that connection before the
// throttle time has passed (KIP-219), although it was sent at once. A
// client of a version before KIP-219 (Produce v5) gets its response held
// back for the throttle time instead.
func TestQuotaMutesConnection(t *testing.T) {
	b, metrics := startMeteredWith(t, quotaConfig)
	adm := b.Admin()
	const topic = "quota-mute"
	harness.CreateTopic(t, adm, topic, 1, nil)
	setQuota(t, adm, "muted", "producer_byte_rate", 50<<10)
	setQuota(t, adm, "old", "producer_byte_rate", 50<<10)

	batch := harness.BuildBatch(harness.BatchSpec{ProducerID: -1, Records: []harness.RawRecord{{Value: make([]byte, 100<<10)}}})
	produce := func(v int16) kmsg.Request {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = v, 1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c := dial()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("muted"))
	var out []byte
	for corr := range int32(2) { // both at once, as a client that ignores throttles
		out = append(out, f.AppendRequest(nil, produce(9), corr)...)
	}
	if _, err := c.Write(out); err != nil {
		t.Fatal(err)
	}
	var at [2]time.Time
	var throttles [2]int32
	for i := range 2 {
		resp := readResponse(t, c, produce(9), 30*time.Second).(*kmsg.ProduceResponse)
		at[i] = time.Now()
		throttles[i] = resp.ThrottleMillis
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("response %d: error %d", i, code)
		}
	}
	// 100 KiB over one 1 s window at 50 KiB/s: a throttle of about 1 s.
	if throttles[0] < 500 {
		t.Fatalf("first response's throttle_time_ms %d, want about 1000", throttles[0])
	}
	if gap := at[1].Sub(at[0]); gap < time.Duration(throttles[0])*time.Millisecond/2 {
		t.Errorf("second response %v after the first, whose throttle was %d ms: the connection was not muted", gap, throttles[0])
	}
	if n := metricValue(t, metrics, `strata_quota_throttle_time_ms_total{type="produce"}`); n < int(throttles[0]) {
		t.Errorf("strata_quota_throttle_time_ms_total{type=\"produce\"} = %d, want at least %d", n, throttles[0])
	}

	old := dial()
	sent := time.Now()
	if _, err := old.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("old")).AppendRequest(nil, produce(5), 0)); err != nil {
		t.Fatal(err)
	}
	resp := readResponse(t, old, produce(5), 30*time.Second).(*kmsg.ProduceResponse)
	if took := time.Since(sent); resp.ThrottleMillis < 500 || took < time.Duration(resp.ThrottleMillis)*time.Millisecond/2 {
		t.Errorf("Produce v5: throttle_time_ms %d, answered after %v: want the response held back", resp.ThrottleMillis, took)
	}
}

// TestClientQuotasAdmin: kadm sets, validates, describes and removes
// client quotas of every entity type, defaults included.
func TestClientQuotasAdmin(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	ctx := testCtx(t)
	entries := []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: kadm.StringPtr("alice")}, {Type: "client-id", Name: kadm.StringPtr("app")}},
			Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1 << 20}, {Key: "consumer_byte_rate", Value: 2 << 20}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "user"}}, Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 200}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: kadm.StringPtr("127.0.0.1")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 100}}},
	}
	if res, err := adm.ValidateAlterClientQuotas(ctx, entries); err != nil || len(res) != 3 || res[0].Err != nil {
		t.Fatalf("validate: %v %+v", err, res)
	}
	if got, err := adm.DescribeClientQuotas(ctx, false, nil); err != nil || len(got) != 0 {
		t.Fatalf("validate_only stored something: %v %+v", err, got)
	}
	res, err := adm.AlterClientQuotas(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("alter %v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
	got, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: kadm.StringPtr("alice")}})
	if err != nil || len(got) != 1 || len(got[0].Values) != 2 || len(got[0].Entity) != 2 || got[0].Entity[1].Type != "client-id" {
		t.Fatalf("describe user alice: %v %+v", err, got)
	}
	got, err = adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: kmsg.QuotasMatchTypeDefault}})
	if err != nil || len(got) != 1 || got[0].Values[0].Key != "request_percentage" || got[0].Values[0].Value != 200 {
		t.Fatalf("describe default user: %v %+v", err, got)
	}
	got, err = adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil || len(got) != 3 {
		t.Fatalf("describe all: %v %+v", err, got)
	}
	bad, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: kadm.StringPtr("bob")}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 1}}}})
	if err != nil || len(bad) != 1 || bad[0].Err == nil {
		t.Fatalf("a user's connection_creation_rate: %v %+v", err, bad)
	}
	for i := range entries {
		for j := range entries[i].Ops {
			entries[i].Ops[j].Remove = true
		}
	}
	if _, err := adm.AlterClientQuotas(ctx, entries); err != nil {
		t.Fatal(err)
	}
	if got, err := adm.DescribeClientQuotas(ctx, false, nil); err != nil || len(got) != 0 {
		t.Fatalf("after removing all: %v %+v", err, got)
	}
}

// TestConnectionCreationRate: an ip over its connection_creation_rate has
// its new connections closed, without an answer, while those within the
// rate are served; strata_quota_throttled_total counts the refused ones.
func TestConnectionCreationRate(t *testing.T) {
	b, metrics := startMeteredWith(t, quotaConfig)
	res, err := b.Admin().AlterClientQuotas(testCtx(t), []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "ip", Name: kadm.StringPtr("127.0.0.1")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 2}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter client quotas: %v %+v", err, res)
	}
	// 10 connections at once: at 2 per second over at least one window,
	// 2 get in (the admin client's came before the quota).
	var conns []net.Conn
	for range 10 {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	var served, refused int
	for i, c := range conns {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "quota-test", "1"
		_, err := c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, int32(i)))
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		var size [4]byte
		if err == nil {
			_, err = io.ReadFull(c, size[:])
		}
		if err != nil {
			refused++
		} else {
			served++
		}
	}
	t.Logf("served %d, refused %d", served, refused)
	if served < 1 || served > 3 || refused < 7 {
		t.Errorf("served %d and refused %d of 10 connections at once, want at most 3 served", served, refused)
	}
	if n := metricValue(t, metrics, `strata_quota_throttled_total{type="connection"}`); n < refused {
		t.Errorf("strata_quota_throttled_total{type=\"connection\"} = %d, want at least %d", n, refused)
	}
}

// TestClientQuotasSarama: sarama's ClusterAdmin sets and describes client
// quotas, at the APIs' version 0 (sarama's Kafka 2.6) and 1 (3.6).
func TestClientQuotasSarama(t *testing.T) {
	b := harness.Start(t, nil)
	for _, v := range []sarama.KafkaVersion{sarama.V2_6_0_0, sarama.V3_6_0_0} {
		cfg := sarama.NewConfig()
		cfg.Version = v
		adm, err := sarama.NewClusterAdmin([]string{b.Addr()}, cfg)
		if err != nil {
			t.Fatalf("sarama admin: %v", err)
		}
		client := "sarama-" + v.String()
		entity := []sarama.QuotaEntityComponent{{EntityType: sarama.QuotaEntityClientID, MatchType: sarama.QuotaMatchExact, Name: client}}
		if err := adm.AlterClientQuotas(entity, sarama.ClientQuotasOp{Key: "consumer_byte_rate", Value: 4096}, false); err != nil {
			t.Fatalf("%v: alter: %v", v, err)
		}
		def := []sarama.QuotaEntityComponent{{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchDefault}}
		if err := adm.AlterClientQuotas(def, sarama.ClientQuotasOp{Key: "request_percentage", Value: 25}, false); err != nil {
			t.Fatalf("%v: alter default user: %v", v, err)
		}
		got, err := adm.DescribeClientQuotas([]sarama.QuotaFilterComponent{{EntityType: sarama.QuotaEntityClientID, MatchType: sarama.QuotaMatchExact, Match: client}}, true)
		if err != nil || len(got) != 1 || got[0].Values["consumer_byte_rate"] != 4096 || got[0].Entity[0].Name != client {
			t.Fatalf("%v: describe: %v %+v", v, err, got)
		}
		got, err = adm.DescribeClientQuotas([]sarama.QuotaFilterComponent{{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchDefault}}, true)
		if err != nil || len(got) != 1 || got[0].Values["request_percentage"] != 25 || got[0].Entity[0].MatchType != sarama.QuotaMatchDefault {
			t.Fatalf("%v: describe default user: %v %+v", v, err, got)
		}
		if err := adm.AlterClientQuotas(entity, sarama.ClientQuotasOp{Key: "connection_creation_rate", Value: 1}, false); err == nil {
			t.Fatalf("%v: a client id's connection_creation_rate was accepted", v)
		}
		_ = adm.Close()
	}
}
