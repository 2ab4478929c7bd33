package group

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestJoinSyncSingleMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		j := got(t, e.joinNew("g"))
		if j.Err != nil || j.Generation != 1 || j.LeaderID != j.MemberID || j.Protocol != "range" || len(j.Members) != 1 {
			t.Fatalf("join result %+v", j)
		}
		if !bytes.Equal(j.Members[0].Metadata, []byte("meta")) {
			t.Fatalf("leader got metadata %q", j.Members[0].Metadata)
		}
		if s := e.state("g"); s != CompletingRebalance {
			t.Fatalf("state %v, want CompletingRebalance", s)
		}
		s := got(t, e.syncAsync(SyncRequest{Group: "g", MemberID: j.MemberID, Generation: 1,
			Assignments: map[string][]byte{j.MemberID: []byte("a")}}))
		if s.Err != nil || string(s.Assignment) != "a" || s.Protocol != "range" || s.ProtocolType != "consumer" {
			t.Fatalf("sync result %+v", s)
		}
		if st := e.state("g"); st != Stable {
			t.Fatalf("state %v, want Stable", st)
		}
		wantErr(t, "heartbeat", e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: j.MemberID, Generation: 1}), nil)
	})
}

func TestJoinErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		r := joinReq("", "")
		wantErr(t, "empty group", got(t, e.joinAsync(r)).Err, ErrInvalidGroupID)
		r = joinReq("g", "")
		r.SessionTimeout = time.Millisecond
		wantErr(t, "short session", got(t, e.joinAsync(r)).Err, ErrInvalidSessionTimeout)
		wantErr(t, "unknown member of a missing group", got(t, e.joinAsync(joinReq("g", "nobody"))).Err, ErrUnknownMemberID)
		r = joinReq("g", "")
		r.ProtocolType = ""
		wantErr(t, "no protocol type", got(t, e.joinAsync(r)).Err, ErrInconsistentProtocol)

		j := e.stableGroup("g")
		r = joinReq("g", "")
		r.ProtocolType = "connect"
		wantErr(t, "other protocol type", got(t, e.joinAsync(r)).Err, ErrInconsistentProtocol)
		r = joinReq("g", "")
		r.Protocols = []Protocol{{Name: "roundrobin"}}
		wantErr(t, "no common protocol", got(t, e.joinAsync(r)).Err, ErrInconsistentProtocol)
		wantErr(t, "unknown member", got(t, e.joinAsync(joinReq("g", "nobody"))).Err, ErrUnknownMemberID)

		wantErr(t, "heartbeat wrong generation", e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: j.MemberID, Generation: 7}), ErrIllegalGeneration)
		wantErr(t, "heartbeat unknown member", e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: "x", Generation: 1}), ErrUnknownMemberID)
		wantErr(t, "heartbeat unknown group", e.c.Heartbeat(HeartbeatRequest{Group: "nope", MemberID: "x", Generation: 1}), ErrUnknownMemberID)
		wantErr(t, "heartbeat empty group id", e.c.Heartbeat(HeartbeatRequest{MemberID: "x"}), ErrInvalidGroupID)
		wantErr(t, "sync wrong generation", got(t, e.syncAsync(SyncRequest{Group: "g", MemberID: j.MemberID, Generation: 0})).Err, ErrIllegalGeneration)
		wantErr(t, "sync unknown member", got(t, e.syncAsync(SyncRequest{Group: "g", MemberID: "x", Generation: 1})).Err, ErrUnknownMemberID)
		other := "sticky"
		wantErr(t, "sync other protocol", got(t, e.syncAsync(SyncRequest{Group: "g", MemberID: j.MemberID, Generation: 1, Protocol: &other})).Err, ErrInconsistentProtocol)
	})
}

func TestSecondMemberRebalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		a := e.stableGroup("g")
		bJoin := e.joinNew("g")
		waiting(t, bJoin)
		if s := e.state("g"); s != PreparingRebalance {
			t.Fatalf("state %v, want PreparingRebalance", s)
		}
		wantErr(t, "heartbeat during rebalance", e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: a.MemberID, Generation: 1}), ErrRebalanceInProgress)
		// A commit with the current generation is still accepted while preparing.
		errs := e.c.CommitOffsets(CommitRequest{Group: "g", MemberID: a.MemberID, Generation: 1,
			Offsets: []CommitOffset{{TopicPartition{"t", 0}, Offset{Offset: 5, LeaderEpoch: -1, ExpireTimestamp: -1}}}})
		wantErr(t, "commit while preparing", errs[0], nil)

		aJoin := e.joinAsync(joinReq("g", a.MemberID))
		ra, rb := got(t, aJoin), got(t, bJoin)
		if ra.Err != nil || rb.Err != nil || ra.Generation != 2 || rb.Generation != 2 {
			t.Fatalf("joins: %+v / %+v", ra, rb)
		}
		if ra.LeaderID != a.MemberID || len(ra.Members) != 2 || len(rb.Members) != 0 {
			t.Fatalf("leader %q (a %q) members %d/%d", ra.LeaderID, a.MemberID, len(ra.Members), len(rb.Members))
		}
		// The follower syncs first and waits for the leader.
		bSync := e.syncAsync(SyncRequest{Group: "g", MemberID: rb.MemberID, Generation: 2})
		waiting(t, bSync)
		wantErr(t, "commit while completing", e.c.CommitOffsets(CommitRequest{Group: "g", MemberID: a.MemberID, Generation: 2,
			Offsets: []CommitOffset{{TopicPartition{"t", 0}, Offset{Offset: 6, LeaderEpoch: -1, ExpireTimestamp: -1}}}})[0], ErrRebalanceInProgress)
		aSync := e.syncAsync(SyncRequest{Group: "g", MemberID: a.MemberID, Generation: 2,
			Assignments: map[string][]byte{a.MemberID: []byte("A"), rb.MemberID: []byte("B")}})
		if s := got(t, aSync); string(s.Assignment) != "A" {
			t.Fatalf("leader sync %+v", s)
		}
		if s := got(t, bSync); string(s.Assignment) != "B" {
			t.Fatalf("follower sync %+v", s)
		}
	})
}

func TestInitialRebalanceDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
		a := e.joinNew("g")
		advance(2 * time.Second)
		b := e.joinNew("g") // arrives within the delay: extends it
		advance(1 * time.Second)
		waiting(t, a)
		advance(3 * time.Second)
		ra, rb := got(t, a), got(t, b)
		if ra.Generation != 1 || rb.Generation != 1 || ra.Err != nil || rb.Err != nil {
			t.Fatalf("joins %+v / %+v", ra, rb)
		}
	})
}

// The initial delay ends one delay after the last arrival (Kafka would wait
// for the end of the next whole delay window), and never past the
// rebalance timeout (20 s here) however long members keep arriving.
func TestInitialDelayEndsADelayAfterTheLastArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
		a := e.joinNew("g")
		advance(time.Second)
		b := e.joinNew("g")
		advance(2 * time.Second)
		waiting(t, a)
		advance(time.Second)
		if ra, rb := got(t, a), got(t, b); ra.Generation != 1 || rb.Generation != 1 || ra.Err != nil || rb.Err != nil {
			t.Fatalf("joins %+v / %+v", ra, rb)
		}

		first := e.joinNew("h")
		for range 9 { // a member every 2 s, 18 s in all
			advance(2 * time.Second)
			e.joinNew("h")
		}
		waiting(t, first)
		advance(2 * time.Second)
		if r := got(t, first); r.Err != nil || r.Generation != 1 || len(r.Members) != 10 {
			t.Fatalf("join at the rebalance timeout: err %v generation %d members %d", r.Err, r.Generation, len(r.Members))
		}
	})
}

// A member given an id in the initial delay is waited for past the delay,
// and its join then ends the delay at once; one that never comes back is
// forgotten after the session timeout (10 s), which ends the delay.
func TestInitialDelayWaitsForHandedOutIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.InitialRebalanceDelay = 3 * time.Second })
		a := e.joinNew("g")
		advance(time.Second)
		first := got(t, e.joinAsync(joinReq("g", ""))) // b announces itself
		if !errors.Is(first.Err, ErrMemberIDRequired) {
			t.Fatalf("first join %+v", first)
		}
		advance(5 * time.Second)
		waiting(t, a)
		b := e.joinAsync(joinReq("g", first.MemberID))
		ra, rb := got(t, a), got(t, b)
		if ra.Err != nil || rb.Err != nil || ra.Generation != 1 || len(ra.Members)+len(rb.Members) != 2 {
			t.Fatalf("joins %+v / %+v", ra, rb)
		}

		c := e.joinNew("h")
		got(t, e.joinAsync(joinReq("h", ""))) // never comes back
		advance(9 * time.Second)
		waiting(t, c)
		advance(time.Second)
		if rc := got(t, c); rc.Err != nil || rc.Generation != 1 || len(rc.Members) != 1 {
			t.Fatalf("join once the handed-out id expired %+v", rc)
		}
	})
}

func TestRebalanceTimeoutDropsMembersThatDoNotRejoin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		a := e.stableGroup("g")
		b := e.joinNew("g") // a must rejoin; it never does
		hb := HeartbeatRequest{Group: "g", MemberID: a.MemberID, Generation: 1}
		advance(9 * time.Second)
		// Heartbeats keep a's session but not its place in the next generation.
		wantErr(t, "heartbeat", e.c.Heartbeat(hb), ErrRebalanceInProgress)
		advance(9 * time.Second)
		wantErr(t, "heartbeat", e.c.Heartbeat(hb), ErrRebalanceInProgress)
		waiting(t, b)
		advance(3 * time.Second)
		rb := got(t, b)
		if rb.Err != nil || rb.Generation != 2 || rb.LeaderID != rb.MemberID || len(rb.Members) != 1 {
			t.Fatalf("join %+v", rb)
		}
		wantErr(t, "old member heartbeat", e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: a.MemberID, Generation: 2}), ErrUnknownMemberID)
	})
}

func TestSessionTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		a := e.stableGroup("g")
		advance(9 * time.Second)
		wantErr(t, "heartbeat", e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: a.MemberID, Generation: 1}), nil)
		advance(9 * time.Second)
		if s := e.state("g"); s != Stable {
			t.Fatalf("state %v after heartbeats, want Stable", s)
		}
		advance(2 * time.Second)
		if s := e.state("g"); s != Empty {
			t.Fatalf("state %v after the session expired, want Empty", s)
		}
		d, _ := e.c.Describe("g")
		if len(d.Members) != 0 {
			t.Fatalf("members %+v", d.Members)
		}
	})
}

func TestPendingSyncTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		a := e.stableGroup("g")
		b := e.joinNew("g")
		ra := got(t, e.joinAsync(joinReq("g", a.MemberID)))
		rb := got(t, b)
		// Only the leader syncs; b heartbeats but never syncs.
		got(t, e.syncAsync(SyncRequest{Group: "g", MemberID: ra.MemberID, Generation: 2}))
		for range 2 {
			advance(9 * time.Second)
			wantErr(t, "a heartbeat", e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: ra.MemberID, Generation: 2}), nil)
			wantErr(t, "b heartbeat", e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: rb.MemberID, Generation: 2}), nil)
		}
		if s := e.state("g"); s != Stable {
			t.Fatalf("state %v, want Stable before the sync deadline", s)
		}
		advance(3 * time.Second)
		if s := e.state("g"); s != PreparingRebalance {
			t.Fatalf("state %v, want PreparingRebalance after b missed its sync", s)
		}
		wantErr(t, "b heartbeat", e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: rb.MemberID, Generation: 2}), ErrUnknownMemberID)
	})
}

func TestJoinRetryWhileCompleting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		j := got(t, e.joinNew("g"))
		again := got(t, e.joinAsync(joinReq("g", j.MemberID)))
		if again.Err != nil || again.Generation != j.Generation || len(again.Members) != 1 {
			t.Fatalf("retried join %+v", again)
		}
	})
}

func TestLeaderRejoinInStableRebalances(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		a := e.stableGroup("g")
		r := got(t, e.joinAsync(joinReq("g", a.MemberID)))
		if r.Err != nil || r.Generation != 2 {
			t.Fatalf("leader rejoin %+v", r)
		}
	})
}

func TestLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		a := e.stableGroup("g")
		b := e.joinNew("g")
		got(t, e.joinAsync(joinReq("g", a.MemberID)))
		rb := got(t, b)
		errs, err := e.c.Leave("g", []LeavingMember{{MemberID: rb.MemberID}, {MemberID: "ghost"}})
		wantErr(t, "leave", err, nil)
		wantErr(t, "leave b", errs[0], nil)
		wantErr(t, "leave ghost", errs[1], ErrUnknownMemberID)
		if s := e.state("g"); s != PreparingRebalance {
			t.Fatalf("state %v", s)
		}
		errs, _ = e.c.Leave("nope", []LeavingMember{{MemberID: "x"}})
		wantErr(t, "leave unknown group", errs[0], ErrUnknownMemberID)
		_, err = e.c.Leave("", nil)
		wantErr(t, "leave empty id", err, ErrInvalidGroupID)
	})
}

func TestMaxSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.MaxSize = 1 })
		e.stableGroup("g")
		wantErr(t, "second member", got(t, e.joinAsync(joinReq("g", ""))).Err, ErrGroupMaxSize)
	})
}

func TestStaticMemberRestartWithoutRebalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		inst := "instance-1"
		req := joinReq("g", "")
		req.InstanceID = &inst
		j := got(t, e.joinAsync(req)) // static members skip MEMBER_ID_REQUIRED
		if j.Err != nil || j.Generation != 1 {
			t.Fatalf("join %+v", j)
		}
		got(t, e.syncAsync(SyncRequest{Group: "g", MemberID: j.MemberID, InstanceID: &inst, Generation: 1,
			Assignments: map[string][]byte{j.MemberID: []byte("mine")}}))

		// The process restarts: same instance id, no member id.
		r := got(t, e.joinAsync(req))
		if r.Err != nil || r.Generation != 1 || r.MemberID == j.MemberID || !r.SkipAssignment || r.LeaderID != r.MemberID {
			t.Fatalf("rejoin %+v", r)
		}
		if s := e.state("g"); s != Stable {
			t.Fatalf("state %v, want Stable (no rebalance)", s)
		}
		s := got(t, e.syncAsync(SyncRequest{Group: "g", MemberID: r.MemberID, InstanceID: &inst, Generation: 1}))
		if s.Err != nil || string(s.Assignment) != "mine" {
			t.Fatalf("sync after restart %+v", s)
		}
		// The old incarnation is fenced.
		wantErr(t, "old heartbeat", e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: j.MemberID, InstanceID: &inst, Generation: 1}), ErrFencedInstanceID)
		wantErr(t, "old commit", e.c.CommitOffsets(CommitRequest{Group: "g", MemberID: j.MemberID, InstanceID: &inst, Generation: 1,
			Offsets: []CommitOffset{{TopicPartition{"t", 0}, Offset{Offset: 1, LeaderEpoch: -1, ExpireTimestamp: -1}}}})[0], ErrFencedInstanceID)

		// Pre-KIP-814 clients are not told they lead.
		old := req
		old.SupportsSkipAssignment = false
		r2 := got(t, e.joinAsync(old))
		if r2.Err != nil || r2.LeaderID != r.MemberID || r2.SkipAssignment || len(r2.Members) != 0 {
			t.Fatalf("v8 rejoin %+v", r2)
		}

		// A restart with a new subscription rebalances.
		changed := req
		changed.Protocols = []Protocol{{Name: "range", Metadata: []byte("other")}}
		w := e.joinAsync(changed)
		r3 := got(t, w)
		if r3.Err != nil || r3.Generation != 2 {
			t.Fatalf("changed rejoin %+v", r3)
		}

		// Administrative removal by instance id.
		errs, err := e.c.Leave("g", []LeavingMember{{InstanceID: &inst}})
		if err != nil || errs[0] != nil {
			t.Fatalf("leave by instance: %v %v", err, errs)
		}
		if st := e.state("g"); st != PreparingRebalance && st != Empty {
			t.Fatalf("state %v after leave", st)
		}
	})
}

func TestStaticMemberSurvivesRebalanceTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		inst := "s"
		req := joinReq("g", "")
		req.InstanceID = &inst
		req.SessionTimeout = 40 * time.Second // outlives the rebalance timeout
		s := got(t, e.joinAsync(req))
		got(t, e.syncAsync(SyncRequest{Group: "g", MemberID: s.MemberID, InstanceID: &inst, Generation: 1}))
		d := e.joinNew("g")
		// The static member does not rejoin within the rebalance timeout but
		// keeps its place; d gets the join answer.
		advance(20 * time.Second)
		rd := got(t, d)
		if rd.Err != nil || rd.Generation != 2 {
			t.Fatalf("dynamic join %+v", rd)
		}
		desc, _ := e.c.Describe("g")
		if len(desc.Members) != 2 {
			t.Fatalf("members %+v, want the static member kept", desc.Members)
		}
	})
}

func TestParkedJoinHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		e.stableGroup("g")
		first := got(t, e.joinAsync(joinReq("g", "")))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r := e.c.Join(ctx, joinReq("g", first.MemberID))
		if !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("join with a done context: %+v", r)
		}
	})
}

func TestNotCoordinatorAndLoading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		e.c.SetPartitionCount(2) // half the groups now hash to partition 1, not led here
		var other string
		for _, g := range []string{"a", "b", "c", "d", "e", "f"} {
			if PartitionFor(g, 2) == 1 {
				other = g
				break
			}
		}
		wantErr(t, "not coordinator", got(t, e.joinAsync(joinReq(other, ""))).Err, ErrNotCoordinator)
		e.c.SetPartitionCount(0)
		wantErr(t, "no topic", e.c.Heartbeat(HeartbeatRequest{Group: "g"}), ErrNotCoordinator)
		e.c.SetPartitionCount(1)
		e.stableGroup("h")  // a record for the reload to read
		e.log.SetFail(true) // a reload at a new epoch cannot read the log
		e.c.Elect(0, 1, e.log)
		wantErr(t, "loading", e.c.Heartbeat(HeartbeatRequest{Group: "g"}), ErrLoadInProgress)
		if _, err := e.c.List(nil, nil); !errors.Is(err, ErrLoadInProgress) {
			t.Fatalf("list while loading: %v", err)
		}
		e.log.SetFail(false)
	})
}

func TestResignAnswersParkedRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		e.stableGroup("g")
		w := e.joinNew("g")
		e.c.Resign(0)
		wantErr(t, "parked join", got(t, w).Err, ErrNotCoordinator)
		wantErr(t, "after resign", e.c.Heartbeat(HeartbeatRequest{Group: "g"}), ErrNotCoordinator)
	})
}

func TestStaticRejoinIgnoresOwnedPartitionsInMetadata(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		meta := func(topics []string, owned int32) []byte {
			var m kmsg.ConsumerMemberMetadata
			m.Version, m.Topics = 1, topics
			if owned >= 0 {
				m.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "t", Partitions: []int32{owned}}}
			}
			return m.AppendTo(nil)
		}
		inst := "sticky"
		req := joinReq("g", "")
		req.InstanceID = &inst
		req.Protocols = []Protocol{{Name: "cooperative-sticky", Metadata: meta([]string{"t"}, 0)}}
		j := got(t, e.joinAsync(req))
		got(t, e.syncAsync(SyncRequest{Group: "g", MemberID: j.MemberID, InstanceID: &inst, Generation: j.Generation}))
		// Restarted without the owned partitions: same subscription, no rebalance.
		req.Protocols = []Protocol{{Name: "cooperative-sticky", Metadata: meta([]string{"t"}, -1)}}
		if r := got(t, e.joinAsync(req)); r.Err != nil || r.Generation != j.Generation {
			t.Fatalf("rejoin with the same topics %+v", r)
		}
		// Restarted with another topic: a rebalance.
		req.Protocols = []Protocol{{Name: "cooperative-sticky", Metadata: meta([]string{"t", "u"}, -1)}}
		if r := got(t, e.joinAsync(req)); r.Err != nil || r.Generation != j.Generation+1 {
			t.Fatalf("rejoin with another topic %+v", r)
		}
	})
}
