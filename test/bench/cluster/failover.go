package main

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/perf"
)

const failoverTopic = "failover"

// partition0 returns the leader and ISR of failoverTopic's partition 0.
func partition0(ctx context.Context, adm *kadm.Client) (int32, []int32, error) {
	md, err := adm.Metadata(ctx, failoverTopic)
	if err != nil {
		return -1, nil, err
	}
	td, ok := md.Topics[failoverTopic]
	if !ok || len(td.Partitions) == 0 {
		return -1, nil, fmt.Errorf("no metadata for %s", failoverTopic)
	}
	p := td.Partitions[0]
	return p.Leader, p.ISR, nil
}

// waitInSync waits until partition 0 has a leader other than not and all n replicas in sync.
func waitInSync(ctx context.Context, adm *kadm.Client, n int, not int32) (int32, error) {
	deadline := time.Now().Add(readyTimeout)
	for {
		qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		leader, isr, err := partition0(qctx, adm)
		cancel()
		if err == nil && leader > 0 && leader != not && len(isr) == n {
			return leader, nil
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("partition 0 of %s not fully in sync after %v (leader %d, isr %v, err %v)", failoverTopic, readyTimeout, leader, isr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// measureFailover runs trials of: kill -9 the leader of a one-partition
// RF=3 topic, time until the next acks=all produce succeeds (so on the new
// leader), restart the killed broker and wait until it is back in sync.
func measureFailover(ctx context.Context, c *cluster, trials int, session time.Duration) ([]time.Duration, error) {
	if err := perf.EnsureTopic(ctx, c.addrs, failoverTopic, 1, len(c.brokers)); err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.addrs...),
		kgo.DefaultProduceTopic(failoverTopic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.MetadataMinAge(50*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
		kgo.RecordDeliveryTimeout(4*session+30*time.Second),
		kgo.AlwaysRetryEOF(), // a killed broker's connection may read as EOF
	)
	if err != nil {
		return nil, fmt.Errorf("failover client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var out []time.Duration
	for trial := range trials {
		leader, err := waitInSync(ctx, adm, len(c.brokers), -1)
		if err != nil {
			return out, err
		}
		if err := cl.ProduceSync(ctx, kgo.StringRecord("warm-up")).FirstErr(); err != nil {
			return out, fmt.Errorf("trial %d: produce before the kill: %w", trial, err)
		}
		c.brokers[leader-1].child.Stop(syscall.SIGKILL, 10*time.Second)
		killed := time.Now()
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("after kill %d", trial))).FirstErr(); err != nil {
			return out, fmt.Errorf("trial %d: produce after killing broker %d: %w", trial, leader, err)
		}
		took := time.Since(killed)
		newLeader, err := waitInSync(ctx, adm, len(c.brokers)-1, leader)
		if err != nil {
			return out, fmt.Errorf("trial %d: %w", trial, err)
		}
		fmt.Printf("  trial %d: killed leader %d, produce acked on leader %d after %v\n", trial+1, leader, newLeader, took.Round(time.Millisecond))
		out = append(out, took)
		if err := c.startBroker(int(leader)); err != nil {
			return out, err
		}
	}
	if _, err := waitInSync(ctx, adm, len(c.brokers), -1); err != nil {
		return out, err
	}
	return out, nil
}

// median of ds (the mean of the middle two for an even count).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
