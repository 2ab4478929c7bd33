package e2e

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// saramaHandler consumes claims, marking each message with metadata.
type saramaHandler struct {
	tr *tracker
}

func (saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h saramaHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		h.tr.add(msg.Partition, msg.Offset)
		sess.MarkMessage(msg, "sarama-meta")
	}
	return nil
}

// TestGroupSarama consumes with a sarama consumer group (two members,
// range strategy), then checks the commits and their metadata.
func TestGroupSarama(t *testing.T) {
	b := harness.Start(t, groupOverrides)
	adm := b.Admin()
	const topic, group, parts, n = "sarama-grp", "sarama-group", 4, 200
	harness.CreateTopic(t, adm, topic, parts, nil)

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	tr := newTracker()
	ctx, cancel := context.WithCancel(groupCtx(t))
	defer cancel()
	var wg sync.WaitGroup
	var groups []sarama.ConsumerGroup
	for range 2 {
		cg, err := sarama.NewConsumerGroup([]string{b.Addr()}, group, cfg)
		if err != nil {
			t.Fatalf("sarama consumer group: %v", err)
		}
		groups = append(groups, cg)
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := cg.Consume(ctx, []string{topic}, saramaHandler{tr}); err != nil && ctx.Err() == nil {
					t.Errorf("sarama consume: %v", err)
					return
				}
			}
		})
	}
	// Both members are in the group before there is anything to consume.
	waitGroup(t, adm, group, func(d kadm.DescribedGroup) bool { return d.State == "Stable" && len(d.Members) == 2 })
	produceSpread(t, b.Addr(), topic, parts, 0, n)
	tr.waitFor(t, n, "sarama")
	cancel()
	wg.Wait()
	for _, cg := range groups {
		if err := cg.Close(); err != nil {
			t.Errorf("sarama close: %v", err)
		}
	}
	checkCommittedAtEnd(t, adm, group, topic)
	for p, o := range committedOffsets(t, adm, group, topic) {
		if o.Metadata != "sarama-meta" {
			t.Errorf("partition %d committed metadata %q", p, o.Metadata)
		}
	}
}

// TestGroupKcat consumes with kcat's balanced consumer (-G, librdkafka)
// twice: the second run starts at the first run's commits and sees only
// newer records. The second run uses cooperative-sticky.
func TestGroupKcat(t *testing.T) {
	b := harness.Start(t, groupOverrides)
	adm := b.Admin()
	const topic, group, parts = "kcat-grp", "kcat-group", 3
	harness.CreateTopic(t, adm, topic, parts, nil)
	produceSpread(t, b.Addr(), topic, parts, 0, 60)
	run := func(strategy string) []string {
		out := harness.Kcat(t, "-b", b.Addr(), "-G", group, "-X", "auto.offset.reset=earliest",
			"-X", "partition.assignment.strategy="+strategy, "-X", "session.timeout.ms=6000",
			"-e", "-q", "-f", "%s\n", topic)
		got := strings.Fields(out)
		slices.Sort(got)
		return got
	}
	if got := run("range"); len(got) != 60 {
		t.Fatalf("first kcat run consumed %d records, want 60", len(got))
	}
	checkCommittedAtEnd(t, adm, group, topic)
	produceSpread(t, b.Addr(), topic, parts, 60, 6)
	got := run("cooperative-sticky")
	want := []string{"v60", "v61", "v62", "v63", "v64", "v65"}
	if !slices.Equal(got, want) {
		t.Errorf("second kcat run consumed %v, want %v", got, want)
	}
	checkCommittedAtEnd(t, adm, group, topic)
}

const pythonGroupConsume = `
import sys
from kafka import KafkaConsumer
addr, topic, group, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = KafkaConsumer(topic, bootstrap_servers=addr, group_id=group, auto_offset_reset='earliest',
                  enable_auto_commit=False, consumer_timeout_ms=20000)
got = []
for m in c:
    got.append(m.value.decode())
    if len(got) == n:
        break
c.commit()
c.close()
print(' '.join(got))
`

// TestGroupKafkaPython consumes with kafka-python's KafkaConsumer(group_id=…)
// twice; the second consumer resumes at the first one's commit.
func TestGroupKafkaPython(t *testing.T) {
	b := harness.Start(t, groupOverrides)
	adm := b.Admin()
	const topic, group, parts = "py-grp", "py-group", 2
	harness.CreateTopic(t, adm, topic, parts, nil)
	produceSpread(t, b.Addr(), topic, parts, 0, 40)
	out := harness.Python(t, pythonGroupConsume, b.Addr(), topic, group, "40")
	if got := strings.Fields(out); len(got) != 40 {
		t.Fatalf("python consumed %d records, want 40: %q", len(got), out)
	}
	checkCommittedAtEnd(t, adm, group, topic)
	produceSpread(t, b.Addr(), topic, parts, 40, 4)
	got := strings.Fields(harness.Python(t, pythonGroupConsume, b.Addr(), topic, group, "4"))
	slices.Sort(got)
	if want := []string{"v40", "v41", "v42", "v43"}; !slices.Equal(got, want) {
		t.Errorf("second python consumer got %v, want %v", got, want)
	}
	checkCommittedAtEnd(t, adm, group, topic)
}

// describeConsumerGroup sends a ConsumerGroupDescribe for one group.
func describeConsumerGroup(t *testing.T, cl *kgo.Client, group string) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(groupCtx(t), cl)
	if err != nil || len(resp.Groups) != 1 {
		t.Fatalf("consumer group describe: %+v %v", resp, err)
	}
	return resp.Groups[0]
}

// TestGroupKIP848 runs franz-go members on the KIP-848 consumer protocol
// (server-side uniform assignor): three join, one leaves; every record is
// processed, the group settles with two partitions each and then three,
// and a fresh member resumes at the final commits.
func TestGroupKIP848(t *testing.T) {
	const parts, phase = 6, 300
	const topic, group = "kip848", "kip848-group"
	b, tr, a, bm, c := startKIP848Trio(t, topic, group, parts, phase)
	adm := b.Admin()

	cl := b.Client()
	settled := func(members, each int) {
		t.Helper()
		deadline := time.Now().Add(45 * time.Second)
		for {
			d := describeConsumerGroup(t, cl, group)
			ok := d.ErrorCode == 0 && d.State == "Stable" && len(d.Members) == members && d.AssignorName == "uniform"
			for _, m := range d.Members {
				n := 0
				for _, tp := range m.Assignment.TopicPartitions {
					n += len(tp.Partitions)
				}
				ok = ok && n == each && m.MemberEpoch == d.Epoch
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("group did not settle to %d members × %d partitions: %+v", members, each, d)
			}
			time.Sleep(100 * time.Millisecond) // heartbeats drive the reconciliation
		}
	}
	settled(3, 2)
	listed, err := adm.ListGroupsByType(groupCtx(t), []string{"consumer"})
	if err != nil || len(listed) != 1 {
		t.Errorf("list consumer-type groups: %v %v", listed, err)
	}

	c.leave()
	produceSpread(t, b.Addr(), topic, parts, phase, phase)
	tr.waitFor(t, 2*phase, "after a KIP-848 member left")
	settled(2, 3)
	a.leave()
	bm.leave()
	committed := checkCommittedAtEnd(t, adm, group, topic)

	produceSpread(t, b.Addr(), topic, parts, 2*phase, parts)
	fresh := newTracker()
	f := startFranzMember(t, b.Addr(), group, topic, fresh, kip848Opts()...)
	fresh.waitFor(t, parts, "fresh KIP-848 member")
	f.leave()
	for p, o := range fresh.first() {
		if o != committed[p] {
			t.Errorf("fresh member started partition %d at %d, committed %d", p, o, committed[p])
		}
	}
}

// startKIP848Trio starts a broker with the new group protocol, a topic of
// parts partitions holding phase records, and three franz-go members with
// the server-side balancer, and waits until they processed every record.
func startKIP848Trio(t *testing.T, topic, group string, parts, phase int) (*harness.Broker, *tracker, *franzMember, *franzMember, *franzMember) {
	t.Helper()
	b := harness.Start(t, kip848Overrides())
	harness.CreateTopic(t, b.Admin(), topic, int32(parts), nil)
	produceSpread(t, b.Addr(), topic, parts, 0, phase)
	opts := kip848Opts()
	tr := newTracker()
	a := startFranzMember(t, b.Addr(), group, topic, tr, opts...)
	bm := startFranzMember(t, b.Addr(), group, topic, tr, opts...)
	c := startFranzMember(t, b.Addr(), group, topic, tr, opts...)
	tr.waitFor(t, phase, "three KIP-848 members")
	return b, tr, a, bm, c
}

// kip848Opts makes a franz-go member speak the new group protocol.
func kip848Opts() []kgo.Opt {
	return []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer())}
}
