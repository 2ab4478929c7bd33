package controller

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/strata-broker/strata/metadata"
)

// TestLeaderLossElectsFromISR: when the leading broker's registration
// goes, the controller elects the next live ISR member in replica order,
// bumps both epochs and drops the dead broker from the ISR; partitions the
// dead broker only followed lose it from their ISR with only the
// partition epoch bumped; partitions elsewhere are untouched.
func TestLeaderLossElectsFromISR(t *testing.T) {
	onBoth(t, testLeaderLossElectsFromISR)
}

func testLeaderLossElectsFromISR(t *testing.T, cl cluster) {
	ctl, brokers := cl.open(t), cl.open(t)
	ctx := testCtx(t)
	regs := registerAll(t, brokers, nil, 1, 2, 3, 4)
	if _, err := brokers.CreateTopic(ctx, metadata.Topic{Name: "t", Partitions: map[int32]metadata.PartitionState{
		0: state(1, []int32{1, 2, 3}, []int32{1, 3, 2}), // led by the victim
		1: state(2, []int32{2, 1, 3}, []int32{2, 1, 3}), // followed by it
		2: state(3, []int32{3, 2, 4}, []int32{3, 2, 4}), // not on it
	}}); err != nil {
		t.Fatal(err)
	}
	c := start(t, ctl, 9, Options{})
	waitUntil(t, "elected", c.IsLeader, c.Changed)

	if err := regs[1].Close(); err != nil {
		t.Fatal(err)
	}
	p0 := waitPartition(t, ctl, "t", 0, "leader 2", func(s metadata.PartitionState) bool { return s.Leader == 2 })
	if p0.LeaderEpoch != 1 || p0.PartitionEpoch != 1 || !slices.Equal(p0.ISR, []int32{3, 2}) {
		t.Fatalf("p0 after leader loss = %+v, want leader 2 epochs 1/1 isr [3 2]", p0)
	}
	p1 := waitPartition(t, ctl, "t", 1, "isr without 1", func(s metadata.PartitionState) bool { return !slices.Contains(s.ISR, 1) })
	if p1.Leader != 2 || p1.LeaderEpoch != 0 || p1.PartitionEpoch != 1 || !slices.Equal(p1.ISR, []int32{2, 3}) {
		t.Fatalf("p1 after follower loss = %+v, want leader 2 epochs 0/1 isr [2 3]", p1)
	}
	if p2, _ := ctl.Cache().Partition("t", 2); p2.PartitionEpoch != 0 {
		t.Fatalf("p2 changed: %+v", p2)
	}
}

// TestOfflineUntilISRMemberReturns: with no live ISR member the partition
// goes offline (leader -1, epochs bumped, ISR kept) even though an
// out-of-sync replica is alive; when the ISR member returns it is elected.
func TestOfflineUntilISRMemberReturns(t *testing.T) {
	mem := newMem()
	ctl, brokers := mem.open(t), mem.open(t)
	ctx := testCtx(t)
	regs := registerAll(t, brokers, nil, 1, 2)
	if _, err := brokers.CreateTopic(ctx, metadata.Topic{Name: "t", Partitions: map[int32]metadata.PartitionState{
		0: state(1, []int32{1, 2}, []int32{1}),
	}}); err != nil {
		t.Fatal(err)
	}
	c := start(t, ctl, 9, Options{})
	waitUntil(t, "elected", c.IsLeader, c.Changed)

	if err := regs[1].Close(); err != nil {
		t.Fatal(err)
	}
	off := waitPartition(t, ctl, "t", 0, "offline", func(s metadata.PartitionState) bool { return s.Leader == metadata.NoLeader })
	if off.LeaderEpoch != 1 || off.PartitionEpoch != 1 || !slices.Equal(off.ISR, []int32{1}) {
		t.Fatalf("offline state = %+v, want epochs 1/1 isr [1]", off)
	}

	register(t, brokers, 1, "")
	back := waitPartition(t, ctl, "t", 0, "leader 1 again", func(s metadata.PartitionState) bool { return s.Leader == 1 })
	if back.LeaderEpoch != 2 || back.PartitionEpoch != 2 || !slices.Equal(back.ISR, []int32{1}) {
		t.Fatalf("re-elected state = %+v, want epochs 2/2 isr [1]", back)
	}
}

// TestUncleanElection: a topic with unclean.leader.election.enable=true
// elects its live out-of-sync replica; a topic without the override (and
// the broker default false) goes offline.
func TestUncleanElection(t *testing.T) {
	mem := newMem()
	ctl, brokers := mem.open(t), mem.open(t)
	ctx := testCtx(t)
	regs := registerAll(t, brokers, nil, 1, 2)
	for _, tp := range []metadata.Topic{
		{Name: "unclean", Configs: map[string]string{uncleanKey: "true"}, Partitions: map[int32]metadata.PartitionState{0: state(1, []int32{1, 2}, []int32{1})}},
		{Name: "clean", Partitions: map[int32]metadata.PartitionState{0: state(1, []int32{1, 2}, []int32{1})}},
	} {
		if _, err := brokers.CreateTopic(ctx, tp); err != nil {
			t.Fatal(err)
		}
	}
	c := start(t, ctl, 9, Options{})
	waitUntil(t, "elected", c.IsLeader, c.Changed)
	if err := regs[1].Close(); err != nil {
		t.Fatal(err)
	}
	u := waitPartition(t, ctl, "unclean", 0, "leader 2", func(s metadata.PartitionState) bool { return s.Leader == 2 })
	if u.LeaderEpoch != 1 || !slices.Equal(u.ISR, []int32{2}) {
		t.Fatalf("unclean state = %+v, want leader epoch 1 isr [2]", u)
	}
	waitPartition(t, ctl, "clean", 0, "offline", func(s metadata.PartitionState) bool { return s.Leader == metadata.NoLeader })
}

// TestElectLeaderAPI: preferred and unclean elections on request, with
// their refusals.
func TestElectLeaderAPI(t *testing.T) {
	mem := newMem()
	ctl, brokers := mem.open(t), mem.open(t)
	ctx := testCtx(t)
	registerAll(t, brokers, nil, 1, 2, 3)
	if _, err := brokers.CreateTopic(ctx, metadata.Topic{Name: "t", Partitions: map[int32]metadata.PartitionState{
		0: state(2, []int32{1, 2}, []int32{1, 2}),
		1: state(3, []int32{2, 3}, []int32{3}),
	}}); err != nil {
		t.Fatal(err)
	}
	c := New(ctl, 9, Options{Log: testLogger()})
	if _, err := c.ElectLeaders(ctx, ElectPreferred, []TopicPartition{{"t", 0}}); !errors.Is(err, ErrNotController) {
		t.Fatalf("before Run: %v, want ErrNotController", err)
	}
	r := start(t, ctl, 9, Options{})
	waitUntil(t, "elected", r.IsLeader, r.Changed)

	errs, err := r.ElectLeaders(ctx, ElectPreferred, []TopicPartition{{"t", 0}})
	if err != nil || errs[0] != nil {
		t.Fatalf("preferred election: %v %v", err, errs)
	}
	if s, _ := ctl.Cache().Partition("t", 0); s.Leader != 1 || s.LeaderEpoch != 1 {
		t.Fatalf("after preferred election: %+v", s)
	}
	for _, tc := range []struct {
		typ   ElectionType
		parts []TopicPartition
		want  []error
	}{
		{ElectPreferred, []TopicPartition{
			{"t", 0}, // led by 1 now
			{"t", 1}, // 2 is out of the ISR
			{"t", 7}, {"nope", 0},
		}, []error{ErrElectionNotNeeded, ErrPreferredLeaderNotAvailable, metadata.ErrUnknownTopic, metadata.ErrUnknownTopic}},
		{ElectUnclean, []TopicPartition{{"t", 1}}, []error{ErrElectionNotNeeded}}, // 3 is alive
	} {
		errs, err := r.ElectLeaders(ctx, tc.typ, tc.parts)
		if err != nil {
			t.Fatalf("ElectLeaders(%d, %v): %v", tc.typ, tc.parts, err)
		}
		for i := range tc.parts {
			if !errors.Is(errs[i], tc.want[i]) {
				t.Errorf("ElectLeaders(%d) %v = %v, want %v", tc.typ, tc.parts[i], errs[i], tc.want[i])
			}
		}
	}
	if _, err := r.ElectLeaders(ctx, ElectionType(5), []TopicPartition{{"t", 0}}); !errors.Is(err, ErrUnknownElectionType) {
		t.Errorf("unknown election type: %v", err)
	}
}

// TestAutoLeaderRebalance: with auto.leader.rebalance.enable the
// controller moves leadership back to the preferred replica once it is in
// the ISR.
func TestAutoLeaderRebalance(t *testing.T) {
	mem := newMem()
	ctl, brokers := mem.open(t), mem.open(t)
	ctx := testCtx(t)
	registerAll(t, brokers, nil, 1, 2)
	if _, err := brokers.CreateTopic(ctx, metadata.Topic{Name: "t", Partitions: map[int32]metadata.PartitionState{
		0: state(2, []int32{1, 2}, []int32{2}),
		1: state(2, []int32{2, 1}, []int32{2, 1}),
	}}); err != nil {
		t.Fatal(err)
	}
	c := start(t, ctl, 9, Options{AutoLeaderRebalance: true, RebalanceInterval: 50 * time.Millisecond})
	waitUntil(t, "elected", c.IsLeader, c.Changed)
	// Not movable while 1 is out of the ISR; the follower catches up.
	cur, _ := ctl.Cache().Partition("t", 0)
	next := cur.Clone()
	next.ISR, next.PartitionEpoch = []int32{2, 1}, cur.PartitionEpoch+1
	if _, err := brokers.CompareAndSetPartition(ctx, "t", 0, cur.PartitionEpoch, next); err != nil {
		t.Fatal(err)
	}
	got := waitPartition(t, ctl, "t", 0, "leader 1", func(s metadata.PartitionState) bool { return s.Leader == 1 })
	if got.LeaderEpoch != 1 || got.PartitionEpoch != 2 {
		t.Fatalf("rebalanced state = %+v, want epochs 1/2", got)
	}
	if p1, _ := ctl.Cache().Partition("t", 1); p1.Leader != 2 || p1.PartitionEpoch != 0 {
		t.Fatalf("balanced partition changed: %+v", p1)
	}
}
