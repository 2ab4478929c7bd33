package controller

import (
	"slices"
	"testing"

	"github.com/strata-broker/strata/metadata"
)

// TestControlledShutdown: once broker 1 announces its controlled shutdown
// the controller moves the leaderships it holds to the first live ISR
// replica, takes it out of the ISRs of partitions it follows, keeps it
// leading where no other ISR member is live, and never elects it — not
// for a dead leader, not uncleanly, not as preferred leader — while its
// registration lasts. Once it is gone and back (a fresh registration) it
// is electable again.
func TestControlledShutdown(t *testing.T) {
	onBoth(t, testControlledShutdown)
}

func testControlledShutdown(t *testing.T, cl cluster) {
	ctl, brokers := cl.open(t), cl.open(t)
	ctx := testCtx(t)
	regs := registerAll(t, brokers, nil, 1, 2, 3)
	r := []int32{1, 2, 3}
	if _, err := brokers.CreateTopic(ctx, metadata.Topic{Name: "t",
		Configs: map[string]string{uncleanKey: "true"},
		Partitions: map[int32]metadata.PartitionState{
			0: state(1, r, []int32{1, 3, 2}),          // led by 1: moves to 2
			1: state(2, []int32{2, 1, 3}, r),          // followed by 1: leaves the ISR
			2: state(1, r, []int32{1}),                // 1 the only ISR member: stays
			3: state(3, []int32{3, 1}, []int32{3, 1}), // 1 the only other ISR member of 3
			4: state(3, []int32{1, 3}, []int32{3, 1}), // prefers 1
		}}); err != nil {
		t.Fatal(err)
	}
	c := start(t, ctl, 9, Options{})
	waitUntil(t, "elected", c.IsLeader, c.Changed)

	if _, err := regs[1].RequestShutdown(ctx); err != nil {
		t.Fatalf("RequestShutdown: %v", err)
	}
	p0 := waitPartition(t, ctl, "t", 0, "leader 2", func(s metadata.PartitionState) bool { return s.Leader == 2 })
	if p0.LeaderEpoch != 1 || p0.PartitionEpoch != 1 || !slices.Equal(p0.ISR, []int32{3, 2}) {
		t.Fatalf("p0 = %+v, want leader 2 epochs 1/1 isr [3 2]", p0)
	}
	p1 := waitPartition(t, ctl, "t", 1, "isr without 1", func(s metadata.PartitionState) bool { return !slices.Contains(s.ISR, 1) })
	if p1.Leader != 2 || p1.LeaderEpoch != 0 || p1.PartitionEpoch != 1 || !slices.Equal(p1.ISR, []int32{2, 3}) {
		t.Fatalf("p1 = %+v, want leader 2 epochs 0/1 isr [2 3]", p1)
	}
	waitPartition(t, ctl, "t", 3, "isr without 1", func(s metadata.PartitionState) bool { return slices.Equal(s.ISR, []int32{3}) })
	waitPartition(t, ctl, "t", 4, "isr without 1", func(s metadata.PartitionState) bool { return slices.Equal(s.ISR, []int32{3}) })
	if p2, _ := ctl.Cache().Partition("t", 2); p2.Leader != 1 || p2.PartitionEpoch != 0 {
		t.Fatalf("p2, with no other ISR member, changed: %+v", p2)
	}

	// A preferred election on request does not pick broker 1.
	errs, err := c.ElectLeaders(ctx, ElectPreferred, []TopicPartition{{"t", 4}})
	if err != nil || len(errs) != 1 {
		t.Fatalf("ElectLeaders: %v %v", errs, err)
	}
	if p4, _ := ctl.Cache().Partition("t", 4); p4.Leader != 3 {
		t.Fatalf("p4 = %+v: preferred election elected the stopping broker", p4)
	}

	// Broker 3 dies: partition 3's only live replica is stopping broker 1,
	// out of the ISR by now; even the unclean election (enabled for t)
	// leaves the partition offline rather than electing it.
	if err := regs[3].Close(); err != nil {
		t.Fatal(err)
	}
	p3 := waitPartition(t, ctl, "t", 3, "offline", func(s metadata.PartitionState) bool { return s.Leader == metadata.NoLeader })
	if !slices.Equal(p3.ISR, []int32{3}) {
		t.Fatalf("offline p3 = %+v, want isr [3] kept", p3)
	}

	// Broker 1 restarts: its new registration is eligible again, and
	// the unclean election of partition 3 picks it.
	if err := regs[1].Close(); err != nil {
		t.Fatal(err)
	}
	register(t, brokers, 1, "")
	waitPartition(t, ctl, "t", 3, "led by 1", func(s metadata.PartitionState) bool { return s.Leader == 1 })
}
