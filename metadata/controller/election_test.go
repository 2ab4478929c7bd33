package controller

import (
	"errors"
	"testing"

	"github.com/strata-broker/strata/metadata"
)

// TestOneControllerAndHandover: three candidates elect exactly one
// controller, the observer names it, and after it stops another takes
// over with a higher epoch; never two at once on a clean handover.
func TestOneControllerAndHandover(t *testing.T) {
	onBoth(t, func(t *testing.T, cl cluster) {
		rs := []*runner{}
		for id := int32(1); id <= 3; id++ {
			rs = append(rs, start(t, cl.open(t), id, Options{}))
		}
		obs := Observe(testCtx(t), cl.open(t))
		oneLeader := func(rs ...*runner) func() bool {
			return func() bool {
				ls := leaders(rs...)
				if len(ls) > 1 {
					t.Fatalf("%d controllers at once", len(ls))
				}
				return len(ls) == 1 && obs.ControllerID() == ls[0].ID() && obs.Info().Epoch == ls[0].Epoch()
			}
		}
		waitUntil(t, "one controller", oneLeader(rs...), append(wakersOf(rs...), obs.Changed)...)
		first := leaders(rs...)[0]
		if first.Epoch() < 1 {
			t.Fatalf("first epoch %d", first.Epoch())
		}

		if err := first.stop(); err != nil {
			t.Fatalf("Run of the stopped controller: %v", err)
		}
		if first.IsLeader() {
			t.Fatal("stopped controller still leads")
		}
		var rest []*runner
		for _, r := range rs {
			if r != first {
				rest = append(rest, r)
			}
		}
		waitUntil(t, "a successor", oneLeader(rest...), append(wakersOf(rest...), obs.Changed)...)
		if next := leaders(rest...)[0]; next.Epoch() <= first.Epoch() {
			t.Fatalf("successor epoch %d not above %d", next.Epoch(), first.Epoch())
		}
	})
}

// TestCrashedControllerReplaced: a controller whose store goes away (on
// etcd its client closes without revoking anything, so its session
// expires after the TTL) is replaced with a higher epoch; its Run reports
// the closed store.
func TestCrashedControllerReplaced(t *testing.T) {
	onBoth(t, func(t *testing.T, cl cluster) {
		s1 := cl.open(t)
		c1 := start(t, s1, 1, Options{})
		waitUntil(t, "c1 elected", c1.IsLeader, c1.Changed)
		c2 := start(t, cl.open(t), 2, Options{})
		obs := Observe(testCtx(t), cl.open(t))
		waitUntil(t, "observer sees c1", func() bool { return obs.ControllerID() == 1 }, obs.Changed)

		if err := s1.Close(); err != nil {
			t.Fatalf("close c1's store: %v", err)
		}
		waitUntil(t, "c2 elected", c2.IsLeader, c2.Changed)
		if c2.Epoch() <= c1.Epoch() {
			t.Fatalf("c2 epoch %d not above c1's %d", c2.Epoch(), c1.Epoch())
		}
		waitUntil(t, "observer sees c2", func() bool { return obs.ControllerID() == 2 }, obs.Changed)
		if err := c1.exited(t); !errors.Is(err, metadata.ErrClosed) {
			t.Fatalf("crashed controller's Run = %v, want ErrClosed", err)
		}
	})
}

// TestDeposedControllerIsFenced: when a controller's session expires (as
// when it is partitioned away), a successor is elected, and every write
// of the old term fails with ErrFenced; the deposed controller steps
// down.
func TestDeposedControllerIsFenced(t *testing.T) {
	mem := newMem()
	s1, s2 := mem.open(t), mem.open(t)
	ctx := testCtx(t)
	registerAll(t, s2, nil, 1, 2)
	if _, err := s2.CreateTopic(ctx, metadata.Topic{Name: "t", Partitions: map[int32]metadata.PartitionState{
		0: state(1, []int32{1, 2}, []int32{1, 2}),
	}}); err != nil {
		t.Fatal(err)
	}
	c1 := start(t, s1, 1, Options{})
	waitUntil(t, "c1 elected", c1.IsLeader, c1.Changed)
	old, err := c1.currentTerm()
	if err != nil {
		t.Fatal(err)
	}
	c2 := start(t, s2, 2, Options{})

	if !mem.ExpireControllerSession(1) {
		t.Fatal("no session of controller 1")
	}
	waitUntil(t, "c2 elected, c1 stepped down", func() bool { return c2.IsLeader() && !c1.IsLeader() }, c1.Changed, c2.Changed)
	if c2.Epoch() <= old.Epoch() {
		t.Fatalf("c2 epoch %d not above %d", c2.Epoch(), old.Epoch())
	}

	cur, _ := s1.Cache().Partition("t", 0)
	next := cur.Clone()
	next.Leader, next.LeaderEpoch, next.PartitionEpoch = 2, cur.LeaderEpoch+1, cur.PartitionEpoch+1
	err = c1.write(ctx, old, update{topic: "t", partition: 0, prev: cur, next: next, why: "test"})
	if !errors.Is(err, metadata.ErrFenced) {
		t.Fatalf("deposed controller's write: %v, want ErrFenced", err)
	}
	if got, _ := s1.Cache().Partition("t", 0); got.PartitionEpoch != cur.PartitionEpoch {
		t.Fatalf("fenced write changed the partition: %+v", got)
	}
	if _, err := c1.ElectLeaders(ctx, ElectPreferred, []TopicPartition{{"t", 0}}); c1.IsLeader() || !errors.Is(err, ErrNotController) {
		t.Fatalf("ElectLeaders on a non-controller: %v", err)
	}
}
