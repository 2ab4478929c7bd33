package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/perf"
)

// throughputOrder is the order of the throughput runs by replication
// factor: ABBA, so that whatever drifts during the bench weighs on RF=1
// and RF=3 alike. The main drift is the page cache growing into memory
// that was never touched before: on a fresh VM the first write to such a
// page costs several times what a write to a recycled page does, so
// whichever run came second would pay for it alone. Each run's topic is
// deleted after it, which also hands its page cache back for the next.
var throughputOrder = []int{1, 3, 3, 1}

// rfTotal adds up the runs of one replication factor.
type rfTotal struct {
	res      perf.Result // Bytes, Records and Elapsed summed
	cpuStart []cpuSample
	cpuEnd   []cpuSample
}

// mbPerSec is the throughput over all runs.
func (t *rfTotal) mbPerSec() float64 { return t.res.MBPerSec() }

// cpu sums the CPU use of the runs.
func (t *rfTotal) cpu() string {
	var from, to cpuSample
	var wall time.Duration
	for i := range t.cpuStart {
		from.brokers += t.cpuStart[i].brokers
		from.client += t.cpuStart[i].client
		to.brokers += t.cpuEnd[i].brokers
		to.client += t.cpuEnd[i].client
		wall += t.cpuEnd[i].at.Sub(t.cpuStart[i].at)
	}
	to.at = from.at.Add(wall)
	return cpuUse(from, to, float64(t.res.Bytes)/(1<<20))
}

// throughput measures RF=1 and RF=3 acks=all throughput (same client
// settings for both) and the RF=3 p99 at the fixed rate, and returns the
// summary lines.
func throughput(ctx context.Context, c *cluster, o options) ([]string, error) {
	base := perf.ProduceOptions{Brokers: c.addrs, RecordSize: o.recordSize, Duration: o.duration, Partitions: o.partitions, Concurrency: 2}
	// The fixed-rate run goes first, on a quiet cluster: not while the
	// brokers still delete the gigabytes of a throughput run's topic.
	paced := base
	paced.Topic, paced.ReplicationFactor, paced.Concurrency = "paced-rf3", 3, 1
	paced.Throughput = o.rateMB * (1 << 20) / float64(o.recordSize)
	r, err := perf.Produce(ctx, paced)
	if err != nil {
		return nil, fmt.Errorf("fixed-rate run: %w", err)
	}
	fmt.Printf("RF=3 acks=all at %.0f MB/s: %s\n", o.rateMB, r)
	if err := deleteTopic(ctx, c.addrs, paced.Topic); err != nil {
		return nil, err
	}
	// Commit latency, at the same fixed rate: EndTxn waits for
	// __transaction_state's RF=3 write, then markers go to every
	// partition's leader.
	txn := paced
	txn.Topic, txn.TransactionalID, txn.CommitEvery = "txn-rf3", "bench-cluster", 1000
	tr, err := perf.Produce(ctx, txn)
	if err != nil {
		return nil, fmt.Errorf("transactional run: %w", err)
	}
	fmt.Printf("RF=3 transactional at %.0f MB/s: %s\n", o.rateMB, tr)
	if err := deleteTopic(ctx, c.addrs, txn.Topic); err != nil {
		return nil, err
	}
	totals := map[int]*rfTotal{1: {}, 3: {}}
	for i, rf := range throughputOrder {
		opts := base
		opts.Topic, opts.ReplicationFactor = fmt.Sprintf("tput-rf%d-%d", rf, i), rf
		if err := perf.EnsureTopic(ctx, c.addrs, opts.Topic, opts.Partitions, rf); err != nil {
			return nil, fmt.Errorf("RF=%d topic: %w", rf, err)
		}
		if o.warmup > 0 {
			warm := opts
			warm.Duration = o.warmup
			if _, err := perf.Produce(ctx, warm); err != nil {
				return nil, fmt.Errorf("RF=%d warm-up: %w", rf, err)
			}
		}
		before := c.cpu()
		r, err := perf.Produce(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("RF=%d throughput: %w", rf, err)
		}
		after := c.cpu()
		fmt.Printf("RF=%d acks=all: %s\n  %s\n", rf, r, cpuUse(before, after, float64(r.Bytes)/(1<<20)))
		t := totals[rf]
		t.res.Bytes += r.Bytes
		t.res.Records += r.Records
		t.res.Elapsed += r.Elapsed
		t.cpuStart, t.cpuEnd = append(t.cpuStart, before), append(t.cpuEnd, after)
		if err := deleteTopic(ctx, c.addrs, opts.Topic); err != nil {
			return nil, err
		}
	}
	ratio := 0.0
	if totals[1].mbPerSec() > 0 {
		ratio = totals[3].mbPerSec() / totals[1].mbPerSec()
	}
	return []string{
		fmt.Sprintf("throughput RF=1: %7.1f MB/s, RF=3 acks=all: %7.1f MB/s, ratio %.2f (target ≥ 0.5: %s)",
			totals[1].mbPerSec(), totals[3].mbPerSec(), ratio, verdict(ratio >= 0.5)),
		"  RF=1 " + totals[1].cpu(),
		"  RF=3 " + totals[3].cpu(),
		fmt.Sprintf("produce latency RF=3 acks=all at %.0f MB/s (achieved %.1f MB/s): p50 %.2f ms, p99 %.2f ms",
			o.rateMB, r.MBPerSec(), float64(r.LatencyP50)/float64(time.Millisecond), float64(r.LatencyP99)/float64(time.Millisecond)),
		fmt.Sprintf("EndTxn (commit) on 3 brokers, RF=3, a commit every %d records at %.0f MB/s: %d commits, p50 %.2f ms, p99 %.2f ms",
			txn.CommitEvery, o.rateMB, tr.Txns, float64(tr.EndTxnP50)/float64(time.Millisecond), float64(tr.EndTxnP99)/float64(time.Millisecond)),
	}, nil
}

// deleteTopic deletes topic and waits until metadata no longer lists it.
func deleteTopic(ctx context.Context, addrs []string, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopic(ctx, topic); err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		return fmt.Errorf("delete topic %s: %w", topic, err)
	}
	deadline := time.Now().Add(readyTimeout)
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s still listed %v after its deletion (last error %v)", topic, readyTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
