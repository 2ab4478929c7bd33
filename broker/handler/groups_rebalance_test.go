package handler

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Flows of the classic group protocol with several members: JoinGroup
// and SyncGroup wait in goroutines of a synctest bubble, whose clock runs
// the coordinator's timers (initial rebalance delay, session and
// rebalance timeouts) at once.

// classicVersions are the versions a flow's client speaks.
type classicVersions struct{ join, sync, heartbeat, leave int16 }

var classicClients = []struct {
	name string
	v    classicVersions
}{
	{"lowest", classicVersions{0, 0, 0, 0}},
	{"highest", classicVersions{9, 5, 4, 5}},
}

// flow runs f in a synctest bubble over a ready scene, once per client
// generation (the lowest and highest versions served).
func flow(t *testing.T, f func(t *testing.T, s *scene, v classicVersions)) {
	for _, c := range classicClients {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f(t, newScene(t, sceneOpts{groups: true}, 0), c.v)
			})
		})
	}
}

// rejoinAsync has a known member rejoin (it waits in the join phase).
func (s *scene) rejoinAsync(t *testing.T, v int16, m *groupMember) <-chan kmsg.Response {
	t.Helper()
	return s.joinAsync(t, v, joinRequest(s.group, m.id, m.instance))
}

// wantHeartbeats checks each member's heartbeat code.
func (s *scene) wantHeartbeats(t *testing.T, v int16, code int16, members ...*groupMember) {
	t.Helper()
	for _, m := range members {
		if got := s.heartbeat(t, v, m); got != code {
			t.Fatalf("heartbeat of %s (generation %d): %v, want %v", m.id, m.gen, kerr.ErrorForCode(got), kerr.ErrorForCode(code))
		}
	}
}

// TestClassicRebalance: two members form a group; a third joins, which
// rebalances the group: the others learn it from their heartbeats,
// rejoin, and the leader's new assignment (leaving the newcomer out)
// reaches every member; a leaving member starts the next rebalance.
func TestClassicRebalance(t *testing.T) {
	flow(t, func(t *testing.T, s *scene, v classicVersions) {
		s.joinGroup(t, v.join, 2, false)
		s.syncGroup(t, v.sync)
		a, b := s.members[0], s.members[1]
		s.wantHeartbeats(t, v.heartbeat, 0, a, b)

		cJoin := s.joinAsync(t, v.join, joinRequest(s.group, "", nil))
		select {
		case r := <-cJoin:
			t.Fatalf("newcomer answered before the others rejoined: %+v", r)
		default:
		}
		s.wantHeartbeats(t, v.heartbeat, codeRebalancing, a, b)
		aJoin, bJoin := s.rejoinAsync(t, v.join, a), s.rejoinAsync(t, v.join, b)
		ra, rb, rc := joined(t, aJoin), joined(t, bJoin), joined(t, cJoin)
		if ra.Generation != 2 || rb.Generation != 2 || rc.Generation != 2 || ra.LeaderID != a.id || len(ra.Members) != 3 || len(rc.Members) != 0 {
			t.Fatalf("rejoins: %+v / %+v / %+v", ra, rb, rc)
		}
		c := &groupMember{id: rc.MemberID, gen: 2}
		a.gen, b.gen = 2, 2
		s.wantHeartbeats(t, v.heartbeat, codeIllegalGeneration, &groupMember{id: a.id, gen: 1})

		// The followers sync first and wait for the leader, who leaves
		// the newcomer out: it gets an empty assignment.
		bSync := s.sendAsync(t, syncRequest(s.group, b, nil), v.sync)
		cSync := s.sendAsync(t, syncRequest(s.group, c, nil), v.sync)
		synctest.Wait()
		aSync := s.send(t, syncRequest(s.group, a, map[string][]byte{a.id: []byte("A"), b.id: []byte("B")}), v.sync).(*kmsg.SyncGroupResponse)
		sb, sc := (<-bSync).(*kmsg.SyncGroupResponse), (<-cSync).(*kmsg.SyncGroupResponse)
		if string(aSync.MemberAssignment) != "A" || string(sb.MemberAssignment) != "B" || sc.ErrorCode != 0 || len(sc.MemberAssignment) != 0 {
			t.Fatalf("syncs: %+v / %+v / %+v", aSync, sb, sc)
		}
		s.wantHeartbeats(t, v.heartbeat, 0, a, b, c)
		wantState(t, s, "Stable")

		// b leaves: a and c rejoin into generation 3.
		if r := s.send(t, leaveAs(nil, 1)(t, s), v.leave).(*kmsg.LeaveGroupResponse); r.ErrorCode != 0 {
			t.Fatalf("leave: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		s.wantHeartbeats(t, v.heartbeat, codeRebalancing, a, c)
		aJoin, cJoin = s.rejoinAsync(t, v.join, a), s.rejoinAsync(t, v.join, c)
		if ra, rc := joined(t, aJoin), joined(t, cJoin); ra.Generation != 3 || rc.Generation != 3 || len(ra.Members) != 2 {
			t.Fatalf("after the leave: %+v / %+v", ra, rc)
		}
	})
}

// TestClassicSessionTimeout: a member that stops heartbeating is removed
// once its session times out; the one that kept heartbeating is told to
// rejoin and forms the next generation alone.
func TestClassicSessionTimeout(t *testing.T) {
	flow(t, func(t *testing.T, s *scene, v classicVersions) {
		s.joinGroup(t, v.join, 2, false)
		s.syncGroup(t, v.sync)
		a, b := s.members[0], s.members[1]
		for range 4 { // 12 s: b's session of 10 s ends, a's does not
			s.wantHeartbeats(t, v.heartbeat, 0, a)
			s.sleep(3 * time.Second)
		}
		s.wantHeartbeats(t, v.heartbeat, codeRebalancing, a)
		if r := joined(t, s.rejoinAsync(t, v.join, a)); r.Generation != 2 || len(r.Members) != 1 {
			t.Fatalf("rejoin: %+v", r)
		}
		s.wantHeartbeats(t, v.heartbeat, codeUnknownMember, b)
	})
}

// TestClassicRebalanceTimeout: a member that does not rejoin within the
// rebalance timeout is dropped from the next generation.
func TestClassicRebalanceTimeout(t *testing.T) {
	flow(t, func(t *testing.T, s *scene, v classicVersions) {
		s.joinGroup(t, v.join, 2, false)
		s.syncGroup(t, v.sync)
		a, b := s.members[0], s.members[1]
		cJoin := s.joinAsync(t, v.join, joinRequest(s.group, "", nil))
		aJoin := s.rejoinAsync(t, v.join, a)
		// b never rejoins: after the rebalance timeout (v0: the session
		// timeout) the join phase ends without it.
		ra, rc := joined(t, aJoin), joined(t, cJoin)
		if ra.Generation != 2 || rc.Generation != 2 || len(ra.Members) != 2 {
			t.Fatalf("joins: %+v / %+v", ra, rc)
		}
		s.wantHeartbeats(t, v.heartbeat, codeUnknownMember, b)
	})
}

// TestStaticMemberRestart: a static member that restarts takes its old
// place and assignment without a rebalance; its old member id is fenced.
func TestStaticMemberRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScene(t, sceneOpts{groups: true}, 0)
		stableStatic(2)(t, s)
		old, other := s.members[0], s.members[1]
		r := s.send(t, joinRequest(s.group, "", old.instance), 9).(*kmsg.JoinGroupResponse)
		if r.ErrorCode != 0 || r.Generation != old.gen || !r.SkipAssignment {
			t.Fatalf("restart: %+v", r)
		}
		restarted := &groupMember{id: r.MemberID, gen: r.Generation, instance: old.instance}
		s.wantHeartbeats(t, 4, 0, other, restarted)
		s.wantHeartbeats(t, 4, codeFencedInstance, old)
		sync := s.send(t, syncRequest(s.group, restarted, nil), 5).(*kmsg.SyncGroupResponse)
		if sync.ErrorCode != 0 || string(sync.MemberAssignment) != string(assignmentOf(old.id)) {
			t.Fatalf("restarted member synced %+v, want its old assignment", sync)
		}
	})
}

// sleep lets d pass on the bubble's clock and the timers due run.
func (s *scene) sleep(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}
