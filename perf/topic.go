package perf

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topicReadyTimeout bounds how long a created topic may take to show
// leaders for all its partitions in metadata.
const topicReadyTimeout = 30 * time.Second

// metadataPollInterval is the pause between metadata checks while waiting
// for a topic to become ready.
const metadataPollInterval = 50 * time.Millisecond

// withAdmin runs fn with an admin client dialling the brokers with dial.
func withAdmin(dial []kgo.Opt, fn func(*kadm.Client) error) error {
	cl, err := kgo.NewClient(dial...)
	if err != nil {
		return fmt.Errorf("perf: admin client: %w", err)
	}
	defer cl.Close()
	return fn(kadm.NewClient(cl))
}

// EnsureTopic creates topic with the given partitions and replication
// factor (≤ 0 = broker default) unless it exists, then waits until
// metadata shows a leader for every partition.
func EnsureTopic(ctx context.Context, brokers []string, topic string, partitions, replicationFactor int) error {
	return ensureTopic(ctx, dialOpts(brokers, nil), topic, partitions, replicationFactor)
}

// ensureTopic is EnsureTopic dialling the brokers with dial.
func ensureTopic(ctx context.Context, dial []kgo.Opt, topic string, partitions, replicationFactor int) error {
	rf := int16(-1)
	if replicationFactor > 0 {
		rf = int16(replicationFactor)
	}
	return withAdmin(dial, func(adm *kadm.Client) error {
		_, err := adm.CreateTopic(ctx, int32(partitions), rf, nil, topic)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("perf: create topic %q: %w", topic, err)
		}
		return waitTopicReady(ctx, adm, topic)
	})
}

// waitTopicReady polls metadata until every partition of topic has a
// leader, or topicReadyTimeout passes.
func waitTopicReady(ctx context.Context, adm *kadm.Client, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, topicReadyTimeout)
	defer cancel()
	for {
		lastErr := topicReady(ctx, adm, topic)
		if lastErr == nil {
			return nil
		}
		t := time.NewTimer(metadataPollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("perf: topic %q not ready: %w (last: %v)", topic, ctx.Err(), lastErr)
		case <-t.C:
		}
	}
}

// topicReady returns nil when metadata lists topic with a leader for every
// partition, else the reason it is not ready.
func topicReady(ctx context.Context, adm *kadm.Client, topic string) error {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return err
	}
	td, ok := md.Topics[topic]
	switch {
	case !ok:
		return kerr.UnknownTopicOrPartition
	case td.Err != nil:
		return td.Err
	case len(td.Partitions) == 0:
		return errors.New("no partitions")
	}
	for _, p := range td.Partitions {
		if p.Err != nil {
			return fmt.Errorf("partition %d: %w", p.Partition, p.Err)
		}
		if p.Leader < 0 {
			return fmt.Errorf("partition %d: no leader", p.Partition)
		}
	}
	return nil
}

// CountRecords returns the number of offsets between the log start and the
// log end of every partition of topic, which is the record count of a topic
// written without transactions or compaction.
func CountRecords(ctx context.Context, brokers []string, topic string) (int64, error) {
	return countRecords(ctx, dialOpts(brokers, nil), topic)
}

// countRecords is CountRecords dialling the brokers with dial.
func countRecords(ctx context.Context, dial []kgo.Opt, topic string) (int64, error) {
	var total int64
	err := withAdmin(dial, func(adm *kadm.Client) error {
		starts, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			return fmt.Errorf("perf: list start offsets of %q: %w", topic, err)
		}
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return fmt.Errorf("perf: list end offsets of %q: %w", topic, err)
		}
		if err := errors.Join(starts.Error(), ends.Error()); err != nil {
			return fmt.Errorf("perf: list offsets of %q: %w", topic, err)
		}
		if len(ends[topic]) == 0 {
			return fmt.Errorf("perf: topic %q: %w", topic, kerr.UnknownTopicOrPartition)
		}
		for p, end := range ends[topic] {
			start, ok := starts.Lookup(topic, p)
			if !ok {
				return fmt.Errorf("perf: no start offset for %s/%d", topic, p)
			}
			total += end.Offset - start.Offset
		}
		return nil
	})
	return total, err
}
