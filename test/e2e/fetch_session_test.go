package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestFetchSessionsAcrossLeaderChanges: a franz-go consumer (fetch
// sessions on, its default) reads 30 replicated partitions through
// produce bursts, a broker stopping (its leaderships move) and coming
// back (a preferred election moves them back), and gets every record
// exactly once; the brokers hold fetch sessions, consumers' and
// followers'.
func TestFetchSessionsAcrossLeaderChanges(t *testing.T) {
	metrics := map[int]string{}
	bs := startClusterWith(t, 3, func(id int) map[string]string {
		metrics[id] = "127.0.0.1:" + strconv.Itoa(harness.FreePort(t))
		return map[string]string{"metrics.listener": metrics[id], "replica.lag.time.max.ms": "2000"}
	})
	adm := bs[0].Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic, partitions = "sessions", 30
	resp, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	prod := harness.NewClient(t, bs[0].Addr(), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	cons := harness.NewClient(t, bs[0].Addr(), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]int{}
	produced := 0
	burst := func(n int) {
		t.Helper()
		for range n {
			r := &kgo.Record{Value: fmt.Appendf(nil, "v-%d", produced)}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %d: %v", produced, err)
			}
			produced++
		}
		for len(seen) < produced {
			fs := cons.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %d of %d records", len(seen), produced)
			}
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		}
	}
	burst(300)
	waitUntil(t, "fetch sessions on broker 1", 20*time.Second, func() bool { return metricValue(t, metrics[1], "strata_fetch_sessions") >= 2 })

	bs[2].Stop() // its leaderships move to the others
	burst(300)
	bs[2].Restart()
	waitUntil(t, "broker 3 back in every ISR", 30*time.Second, func() bool {
		for _, s := range isr(t, adm, topic) {
			if len(s) != 3 {
				return false
			}
		}
		return true
	})
	if _, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil); err != nil {
		t.Fatalf("elect preferred leaders: %v", err)
	}
	burst(300)
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("record %s read %d times", v, n)
		}
	}
	if len(seen) != produced {
		t.Fatalf("read %d distinct records, want %d", len(seen), produced)
	}
	waitUntil(t, "identical replicas", 20*time.Second, func() bool { return replicasIdentical(t, bs, topic, partitions) })
}
