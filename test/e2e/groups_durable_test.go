package e2e

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// consumerBeat sends one raw ConsumerGroupHeartbeat (v1: the member names
// itself), retrying while the coordinator is loading or moving.
func consumerBeat(t *testing.T, cl *kgo.Client, group, member string, epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic, topics ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
		req.RebalanceTimeoutMillis = -1
		req.Topics = owned
		if epoch == 0 {
			req.RebalanceTimeoutMillis = 30000
			req.SubscribedTopicNames = topics
		}
		resp, err := req.RequestWith(groupCtx(t), cl)
		retry := err != nil
		if err == nil {
			switch kerr.ErrorForCode(resp.ErrorCode) {
			case kerr.CoordinatorLoadInProgress, kerr.NotCoordinator, kerr.CoordinatorNotAvailable:
				retry = true
			}
		}
		if !retry {
			return resp
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer group heartbeat of %s: %+v %v", member, resp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ownedOf turns a heartbeat's assignment into the owned partitions of the
// next heartbeat.
func ownedOf(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if a == nil {
		return out
	}
	for _, tp := range a.Topics {
		out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tp.TopicID, Partitions: slices.Clone(tp.Partitions)})
	}
	return out
}

// TestGroupKIP848SurvivesRestart checks that KIP-848 members, their epochs
// and assignments come back from __consumer_offsets after a broker
// restart: the members go on heartbeating without UNKNOWN_MEMBER_ID.
func TestGroupKIP848SurvivesRestart(t *testing.T) {
	b := harness.Start(t, groupOverrides)
	const topic, group = "kip848-restart", "kip848-restart-group"
	harness.CreateTopic(t, b.Admin(), topic, 4, nil)
	cl := b.Client()

	r1 := consumerBeat(t, cl, group, "member-one", 0, ownedOf(nil), topic)
	if r1.ErrorCode != 0 || r1.MemberEpoch != 1 || r1.Assignment == nil {
		t.Fatalf("join: %+v", r1)
	}
	owned := ownedOf(r1.Assignment)
	if r := consumerBeat(t, cl, group, "member-one", 1, owned); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("heartbeat before restart: %+v", r)
	}

	b.Restart()
	cl = b.Client()
	r := consumerBeat(t, cl, group, "member-one", 1, owned)
	if r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("heartbeat after restart: error %v, epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
	if r.Assignment != nil && len(ownedOf(r.Assignment)[0].Partitions) != 4 {
		t.Fatalf("assignment after restart: %+v", r.Assignment)
	}
	d := describeConsumerGroup(t, cl, group)
	if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != "member-one" || d.Epoch != 1 {
		t.Fatalf("describe after restart: %+v", d)
	}
}

// kip848Overrides are groupOverrides plus fast KIP-848 heartbeats and a
// short KIP-848 session timeout.
func kip848Overrides() map[string]string {
	o := map[string]string{
		"group.consumer.session.timeout.ms":    "1500",
		"group.consumer.heartbeat.interval.ms": "200",
	}
	for k, v := range groupOverrides {
		o[k] = v
	}
	return o
}

// TestGroupKIP848MemberCrash crashes one of three KIP-848 members: with a
// short group.consumer.session.timeout.ms the coordinator removes it and
// the survivors take over its partitions; every record is processed.
func TestGroupKIP848MemberCrash(t *testing.T) {
	const parts, phase = 6, 300
	const topic, group = "kip848-crash", "kip848-crash-group"
	b, tr, a, bm, c := startKIP848Trio(t, topic, group, parts, phase)

	cl := b.Client()
	settled := func(members, each int) {
		t.Helper()
		waitUntil(t, "KIP-848 group settled", 30*time.Second, func() bool {
			d := describeConsumerGroup(t, cl, group)
			ok := d.ErrorCode == 0 && d.State == "Stable" && len(d.Members) == members
			for _, m := range d.Members {
				n := 0
				for _, tp := range m.Assignment.TopicPartitions {
					n += len(tp.Partitions)
				}
				ok = ok && n == each && m.MemberEpoch == d.Epoch
			}
			return ok
		})
	}
	settled(3, 2)
	c.crash()
	settled(2, 3)
	produceSpread(t, b.Addr(), topic, parts, phase, phase)
	tr.waitFor(t, 2*phase, "after a KIP-848 member crashed")
	a.leave()
	bm.leave()
	checkCommittedAtEnd(t, b.Admin(), group, topic)
}

// TestGroupOffsetsReplicated runs three brokers with
// offsets.topic.replication.factor=3: __consumer_offsets is compacted and
// replicated, and after the coordinator of a group stops, the new leader
// of its partition serves the committed offsets.
func TestGroupOffsetsReplicated(t *testing.T) {
	bs := startCluster(t, 3, map[string]string{
		"offsets.topic.replication.factor": "3",
		"offsets.topic.num.partitions":     "3",
		"replica.lag.time.max.ms":          "2000",
	})
	adm := bs[0].Admin()
	harness.CreateTopic(t, adm, "replicated-offsets", 2, nil)
	const group = "replicated-group"
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "replicated-offsets", Partition: 0, At: 17, LeaderEpoch: -1, Metadata: "m0"})
	offsets.Add(kadm.Offset{Topic: "replicated-offsets", Partition: 1, At: 23, LeaderEpoch: -1, Metadata: "m1"})
	// The coordinator's metadata may not have the new topic yet
	// (UNKNOWN_TOPIC_OR_PARTITION for a moment): commit again, as a
	// consumer retries its commit.
	waitUntil(t, "offsets committed", 20*time.Second, func() bool {
		resp, err := adm.CommitOffsets(groupCtx(t), group, offsets)
		if err == nil {
			err = resp.Error()
		}
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return false
		}
		if err != nil {
			t.Fatalf("commit: %v", err)
		}
		return true
	})

	d := topicDetail(t, adm, "__consumer_offsets")
	for p, pd := range d.Partitions {
		if len(pd.Replicas) != 3 {
			t.Errorf("__consumer_offsets-%d replicas %v, want 3", p, pd.Replicas)
		}
	}
	rc, err := adm.DescribeTopicConfigs(groupCtx(t), "__consumer_offsets")
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	policy := ""
	for _, c := range rc[0].Configs {
		if c.Key == "cleanup.policy" && c.Value != nil {
			policy = *c.Value
		}
	}
	if policy != "compact" {
		t.Errorf("__consumer_offsets cleanup.policy %q, want compact", policy)
	}

	// Stop the group's coordinator; another broker takes its partition over.
	coord := int32(-1)
	waitUntil(t, "coordinator found", 20*time.Second, func() bool {
		resp := adm.FindGroupCoordinators(groupCtx(t), group)
		if resp[group].Err != nil {
			return false
		}
		coord = resp[group].NodeID
		return true
	})
	bs[coord-1].Stop()
	other := bs[coord%3]
	oadm := other.Admin()
	waitUntil(t, "committed offsets from the new coordinator", 45*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		got, err := oadm.FetchOffsets(ctx, group)
		if err != nil || got.Error() != nil {
			return false
		}
		o0, ok0 := got.Lookup("replicated-offsets", 0)
		o1, ok1 := got.Lookup("replicated-offsets", 1)
		return ok0 && ok1 && o0.At == 17 && o0.Metadata == "m0" && o1.At == 23 && o1.Metadata == "m1"
	})
}
