package handler

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
)

// TestConsumerGroupHeartbeatRegexMatchesInternalTopics: a KIP-848 member
// whose regex names __consumer_offsets is assigned its partitions, as
// Kafka's coordinator resolves a regex against every topic.
func TestConsumerGroupHeartbeatRegexMatchesInternalTopics(t *testing.T) {
	b := newTestBroker(t, brokerOpts{config: map[string]string{"offsets.topic.num.partitions": "2"}})
	b.createTopic(t, "orders", 1, nil)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	fc.CoordinatorKeys = []string{"regex-group"}
	if c := b.do(t, fc).(*kmsg.FindCoordinatorResponse).Coordinators[0]; c.ErrorCode != 0 {
		t.Fatalf("find coordinator: error %d", c.ErrorCode)
	}
	offsets, ok := b.env.Cache.Topic(group.TopicName)
	if !ok {
		t.Fatalf("%s not created", group.TopicName)
	}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.SetVersion(1)
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = "regex-group", "m", 10000
	req.SubscribedTopicRegex = kmsg.StringPtr("__consumer_offsets|ord.*")
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp = b.do(t, req).(*kmsg.ConsumerGroupHeartbeatResponse)
		retry := resp.ErrorCode == kerr.CoordinatorLoadInProgress.Code || resp.ErrorCode == kerr.NotCoordinator.Code
		if !retry || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp.ErrorCode != 0 || resp.Assignment == nil {
		t.Fatalf("heartbeat: error %d, assignment %v", resp.ErrorCode, resp.Assignment)
	}
	got := map[[16]byte]int{}
	for _, at := range resp.Assignment.Topics {
		got[at.TopicID] = len(at.Partitions)
	}
	orders, _ := b.env.Cache.Topic("orders")
	if len(got) != 2 || got[[16]byte(offsets.ID)] != 2 || got[[16]byte(orders.ID)] != 1 {
		t.Fatalf("assigned %v; want %s's 2 partitions and orders' 1", got, group.TopicName)
	}
}
