package handler

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/strata-broker/strata/broker/txn"
)

// TestTransactionTopicCreation: __transaction_state is created with the
// transaction.state.log.* settings, its replication factor and
// min.insync.replicas clamped to the live brokers, and compacted; a
// second call returns the existing topic.
func TestTransactionTopicCreation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		brokers int
		rf      int
		minISR  string
	}{
		{"two brokers", 2, 2, "2"},
		{"one broker", 1, 1, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newScene(t, sceneOpts{brokers: tc.brokers, config: map[string]string{
					"transaction.state.log.num.partitions":     "3",
					"transaction.state.log.replication.factor": "3",
					"transaction.state.log.min.isr":            "2",
					"transaction.state.log.segment.bytes":      "1048576",
				}}, 0)
				topic, err := s.env.transactionTopic(context.Background())
				if err != nil {
					t.Fatalf("create %s: %v", txn.TopicName, err)
				}
				c := topic.Configs
				if len(topic.Partitions) != 3 || c["cleanup.policy"] != "compact" || c["min.insync.replicas"] != tc.minISR || c["segment.bytes"] != "1048576" {
					t.Fatalf("%s: %d partitions, configs %v", txn.TopicName, len(topic.Partitions), c)
				}
				if st, _ := s.env.Cache.Partition(txn.TopicName, 0); len(st.Replicas) != tc.rf {
					t.Fatalf("replicas %v, want %d", st.Replicas, tc.rf)
				}
				again, err := s.env.transactionTopic(context.Background())
				if err != nil || again.ID != topic.ID {
					t.Fatalf("second call: %v, topic %v then %v", err, topic.ID, again.ID)
				}
			})
		})
	}
}
