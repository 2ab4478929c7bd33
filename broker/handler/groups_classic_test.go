package handler

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Tables of the classic group protocol: JoinGroup, Heartbeat, LeaveGroup,
// SyncGroup, and the helpers that form groups for them and for the flows
// (groups_rebalance_test.go).

// Classic member settings: the session timeout is within the broker's
// default bounds (6 s to 30 min).
const (
	sessionMs   = 10000
	rebalanceMs = 20000
)

// consumerMetadata is a consumer-protocol subscription.
func consumerMetadata(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}

// joinRequest is the JoinGroup of a "consumer" member subscribing to
// topic t with the "range" protocol.
func joinRequest(group, member string, instance *string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.InstanceID = group, member, instance
	req.ProtocolType = "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = sessionMs, rebalanceMs
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", consumerMetadata("t")
	req.Protocols = append(req.Protocols, p)
	return req
}

// memberJoinRequest is a known member's JoinGroup.
func memberJoinRequest(group string, m *groupMember) *kmsg.JoinGroupRequest {
	return joinRequest(group, m.id, m.instance)
}

// asMember is a row's request of member i of s.members, built by build
// and changed by mod.
func asMember[Q kmsg.Request](build func(group string, m *groupMember) Q, i int, mod func(Q)) func(*testing.T, *scene) kmsg.Request {
	return func(_ *testing.T, s *scene) kmsg.Request {
		req := build(s.group, s.members[i])
		if mod != nil {
			mod(req)
		}
		return req
	}
}

func instanceID(i int) *string { return kmsg.StringPtr(fmt.Sprintf("i%d", i)) }

// joinAsync starts a new member's join at version v (v4+ dynamic members
// first fetch their member id) and returns the channel of its parked
// JoinGroup, once it is parked.
func (s *scene) joinAsync(t *testing.T, v int16, req *kmsg.JoinGroupRequest) <-chan kmsg.Response {
	t.Helper()
	if v >= 4 && req.MemberID == "" && req.InstanceID == nil {
		first := s.send(t, req, v).(*kmsg.JoinGroupResponse)
		if first.ErrorCode != kerr.MemberIDRequired.Code || first.MemberID == "" {
			t.Fatalf("first join: %v with member id %q, want MEMBER_ID_REQUIRED", kerr.ErrorForCode(first.ErrorCode), first.MemberID)
		}
		req.MemberID = first.MemberID
	}
	ch := s.sendAsync(t, req, v)
	synctest.Wait()
	return ch
}

// joined waits for a JoinGroup's answer and checks it succeeded.
func joined(t *testing.T, ch <-chan kmsg.Response) *kmsg.JoinGroupResponse {
	t.Helper()
	r, _ := (<-ch).(*kmsg.JoinGroupResponse)
	if r == nil || r.ErrorCode != 0 {
		t.Fatalf("join answered %+v", r)
	}
	return r
}

// joinGroup has n new members join s.group at version v, one after the
// other (the first is the leader), and returns their answers once the
// join phase ended; static members have instance ids i0, i1, ….
func (s *scene) joinGroup(t *testing.T, v int16, n int, static bool) []*kmsg.JoinGroupResponse {
	t.Helper()
	var chans []<-chan kmsg.Response
	for i := range n {
		var inst *string
		if static {
			inst = instanceID(i)
		}
		chans = append(chans, s.joinAsync(t, v, joinRequest(s.group, "", inst)))
	}
	var out []*kmsg.JoinGroupResponse
	s.members = nil
	for i, ch := range chans {
		r := joined(t, ch)
		m := &groupMember{id: r.MemberID, gen: r.Generation}
		if static {
			m.instance = instanceID(i)
		}
		s.members = append(s.members, m)
		out = append(out, r)
	}
	if out[0].LeaderID != out[0].MemberID {
		t.Fatalf("leader %s, want the first member %s", out[0].LeaderID, out[0].MemberID)
	}
	return out
}

// syncRequest is a member's SyncGroup; the leader's carries assignments.
func syncRequest(group string, m *groupMember, assignments map[string][]byte) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.InstanceID, req.Generation = group, m.id, m.instance, m.gen
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for id, a := range assignments {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, a
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	return req
}

// assignmentOf is what syncGroup's leader assigns a member.
func assignmentOf(id string) []byte { return []byte("assign-" + id) }

// syncGroup has s.members sync at version v, followers first; the leader
// (the first) assigns each member assignmentOf itself, and every member
// must get its own.
func (s *scene) syncGroup(t *testing.T, v int16) {
	t.Helper()
	assign := map[string][]byte{}
	for _, m := range s.members {
		assign[m.id] = assignmentOf(m.id)
	}
	chans := make([]<-chan kmsg.Response, len(s.members))
	for i := len(s.members) - 1; i >= 0; i-- {
		var a map[string][]byte
		if i == 0 {
			a = assign
		}
		chans[i] = s.sendAsync(t, syncRequest(s.group, s.members[i], a), v)
		synctest.Wait()
	}
	for i, ch := range chans {
		r, _ := (<-ch).(*kmsg.SyncGroupResponse)
		if r == nil || r.ErrorCode != 0 || string(r.MemberAssignment) != string(assignmentOf(s.members[i].id)) {
			t.Fatalf("member %d synced %+v", i, r)
		}
	}
}

// heartbeatRequest is member m's Heartbeat.
func heartbeatRequest(group string, m *groupMember) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.InstanceID, req.Generation = group, m.id, m.instance, m.gen
	return req
}

// heartbeat sends m's Heartbeat at version v and returns its error code.
func (s *scene) heartbeat(t *testing.T, v int16, m *groupMember) int16 {
	t.Helper()
	return s.send(t, heartbeatRequest(s.group, m), v).(*kmsg.HeartbeatResponse).ErrorCode
}

// Setups of the group tables.

// stable forms a Stable group of n dynamic members.
func stable(n int) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		s.joinGroup(t, 9, n, false)
		s.syncGroup(t, 5)
	}
}

// stableStatic forms a Stable group of n static members.
func stableStatic(n int) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		s.joinGroup(t, 9, n, true)
		s.syncGroup(t, 5)
	}
}

// awaitingSync leaves a group of n members after its join phase
// (CompletingRebalance).
func awaitingSync(n int) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) { s.joinGroup(t, 9, n, false) }
}

// rebalancing forms a Stable group of one member and has a second one
// join, which sends the group to PreparingRebalance (the join waits).
func rebalancing(t *testing.T, s *scene) {
	stable(1)(t, s)
	s.joinAsync(t, 9, joinRequest(s.group, "", nil))
}

// replacedStatic forms a Stable group of static member i0 and restarts
// it: s.members[0] is the old member id, s.members[1] the new one.
func replacedStatic(t *testing.T, s *scene) {
	stableStatic(1)(t, s)
	r := s.send(t, joinRequest(s.group, "", instanceID(0)), 9).(*kmsg.JoinGroupResponse)
	if r.ErrorCode != 0 || r.MemberID == s.members[0].id {
		t.Fatalf("static rejoin: %+v", r)
	}
	s.members = append(s.members, &groupMember{id: r.MemberID, gen: r.Generation, instance: instanceID(0)})
}

// twoBrokers is the scene of rows whose group another broker coordinates.
var twoBrokers = sceneOpts{brokers: 2}

// coordinatedElsewhere makes s.group a group broker 2 coordinates.
func coordinatedElsewhere(t *testing.T, s *scene) { s.group = s.groupLedBy(t, 2) }

// coordinatorClosed shuts the group coordinator down, as a stopping
// broker does.
func coordinatorClosed(t *testing.T, s *scene) {
	if err := s.env.Groups.Close(); err != nil {
		t.Fatal(err)
	}
}

// joinNewMember is a row's JoinGroup of a new dynamic member, changed by
// mod.
func joinNewMember(mod func(*kmsg.JoinGroupRequest)) func(*testing.T, *scene) kmsg.Request {
	return func(_ *testing.T, s *scene) kmsg.Request {
		req := joinRequest(s.group, "", nil)
		if mod != nil {
			mod(req)
		}
		return req
	}
}

func TestJoinGroup(t *testing.T) {
	runRows(t, tableOpts{groups: true, codes: errorCodes}, []apiRow[*kmsg.JoinGroupResponse]{
		{
			// v0-v3 join without a member id; v4+ first get
			// MEMBER_ID_REQUIRED and an id to come back with.
			name: "first member",
			setup: func(t *testing.T, s *scene) {
				if s.version >= 4 {
					r := s.send(t, joinRequest(s.group, "", nil), s.version).(*kmsg.JoinGroupResponse)
					if r.ErrorCode != codeMemberIDRequired || r.MemberID == "" {
						t.Fatalf("first join at v%d: %+v, want MEMBER_ID_REQUIRED with an id", s.version, r)
					}
					s.members = []*groupMember{{id: r.MemberID}}
				}
			},
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := joinRequest(s.group, "", nil)
				if len(s.members) > 0 {
					req.MemberID = s.members[0].id
				}
				return req
			},
			want: func(t *testing.T, _ *scene, r *kmsg.JoinGroupResponse) {
				if r.Generation != 1 || r.LeaderID != r.MemberID || r.MemberID == "" || len(r.Members) != 1 ||
					r.Protocol == nil || *r.Protocol != "range" || string(r.Members[0].ProtocolMetadata) != string(consumerMetadata("t")) {
					t.Fatalf("joined %+v", r)
				}
				if r.Version >= 7 && (r.ProtocolType == nil || *r.ProtocolType != "consumer") {
					t.Fatalf("protocol type %v", msgString(r.ProtocolType))
				}
			},
		},
		{
			name: "new member gets an id", since: 4, req: joinNewMember(nil), codes: []int16{codeMemberIDRequired},
			want: func(t *testing.T, _ *scene, r *kmsg.JoinGroupResponse) {
				if r.MemberID == "" || r.Generation != -1 {
					t.Fatalf("answered member id %q, generation %d", r.MemberID, r.Generation)
				}
			},
		},
		{
			name: "stable follower rejoins unchanged", setup: stable(2), req: asMember(memberJoinRequest, 1, nil),
			want: func(t *testing.T, s *scene, r *kmsg.JoinGroupResponse) {
				if r.Generation != s.members[1].gen || r.LeaderID != s.members[0].id || len(r.Members) != 0 {
					t.Fatalf("rejoin answered %+v", r)
				}
			},
		},
		{name: "empty group id", req: joinNewMember(func(r *kmsg.JoinGroupRequest) { r.Group = "" }), codes: []int16{codeInvalidGroupID}},
		{name: "session timeout too short", req: joinNewMember(func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 1000 }), codes: []int16{codeInvalidSession}},
		{name: "session timeout too long", req: joinNewMember(func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = 1800001 }), codes: []int16{codeInvalidSession}},
		{name: "unknown member of a missing group", req: joinNewMember(func(r *kmsg.JoinGroupRequest) { r.MemberID = "nobody" }), codes: []int16{codeUnknownMember}},
		{name: "unknown member", setup: stable(1), req: joinNewMember(func(r *kmsg.JoinGroupRequest) { r.MemberID = "nobody" }), codes: []int16{codeUnknownMember}},
		{name: "no protocol type", req: joinNewMember(func(r *kmsg.JoinGroupRequest) { r.ProtocolType = "" }), codes: []int16{codeInconsistentProto}},
		{name: "no protocols", req: joinNewMember(func(r *kmsg.JoinGroupRequest) { r.Protocols = nil }), codes: []int16{codeInconsistentProto}},
		{name: "other protocol type", setup: stable(1), req: joinNewMember(func(r *kmsg.JoinGroupRequest) { r.ProtocolType = "connect" }), codes: []int16{codeInconsistentProto}},
		{
			name: "no common protocol", setup: stable(1), codes: []int16{codeInconsistentProto},
			req: joinNewMember(func(r *kmsg.JoinGroupRequest) { r.Protocols[0].Name = "roundrobin" }),
		},
		{name: "consumer group with members", setup: consumerGroup(1), req: joinNewMember(nil), codes: []int16{codeInconsistentProto}},
		{
			name: "group full", scene: sceneOpts{config: map[string]string{"group.max.size": "1"}}, setup: stable(1),
			req: joinNewMember(nil), codes: []int16{codeGroupMaxSize},
		},
		{
			name: "static member restarts without a rebalance", since: 5, setup: stableStatic(2),
			req: func(_ *testing.T, s *scene) kmsg.Request { return joinRequest(s.group, "", instanceID(0)) },
			want: func(t *testing.T, s *scene, r *kmsg.JoinGroupResponse) {
				if r.MemberID == s.members[0].id || r.Generation != s.members[0].gen {
					t.Fatalf("restart answered %+v", r)
				}
				// KIP-814: v9 leaders learn they lead but skip the
				// assignment; older ones are not told they lead.
				if r.Version >= 9 && (!r.SkipAssignment || r.LeaderID != r.MemberID) {
					t.Fatalf("v9 static leader answered %+v", r)
				}
				if r.Version < 9 && (r.LeaderID == r.MemberID || len(r.Members) != 0) {
					t.Fatalf("v%d static leader answered %+v", r.Version, r)
				}
				if code := s.heartbeat(t, 4, s.members[1]); code != 0 {
					t.Fatalf("the other member's heartbeat: %v, want no rebalance", kerr.ErrorForCode(code))
				}
			},
		},
		{name: "fenced static member", since: 5, setup: replacedStatic, req: asMember(memberJoinRequest, 0, nil), codes: []int16{codeFencedInstance}},
		{name: "not coordinator", scene: twoBrokers, setup: coordinatedElsewhere, req: joinNewMember(nil), codes: []int16{codeNotCoordinator}},
		{name: "coordinator shut down", setup: coordinatorClosed, req: joinNewMember(nil), codes: []int16{codeCoordinatorNA}},
	})
}

func TestHeartbeat(t *testing.T) {
	runRows(t, tableOpts{groups: true, codes: errorCodes}, []apiRow[*kmsg.HeartbeatResponse]{
		{name: "stable member", setup: stable(2), req: asMember(heartbeatRequest, 1, nil)},
		{name: "awaiting sync", setup: awaitingSync(2), req: asMember(heartbeatRequest, 1, nil)},
		{name: "static member", since: 3, setup: stableStatic(1), req: asMember(heartbeatRequest, 0, nil)},
		{name: "rebalance in progress", setup: rebalancing, req: asMember(heartbeatRequest, 0, nil), codes: []int16{codeRebalancing}},
		{name: "empty group id", setup: stable(1), req: asMember(heartbeatRequest, 0, func(r *kmsg.HeartbeatRequest) { r.Group = "" }), codes: []int16{codeInvalidGroupID}},
		{name: "unknown group", setup: stable(1), req: asMember(heartbeatRequest, 0, func(r *kmsg.HeartbeatRequest) { r.Group = "nope" }), codes: []int16{codeUnknownMember}},
		{name: "unknown member", setup: stable(1), req: asMember(heartbeatRequest, 0, func(r *kmsg.HeartbeatRequest) { r.MemberID = "nobody" }), codes: []int16{codeUnknownMember}},
		{name: "illegal generation", setup: stable(1), req: asMember(heartbeatRequest, 0, func(r *kmsg.HeartbeatRequest) { r.Generation++ }), codes: []int16{codeIllegalGeneration}},
		{name: "fenced static member", since: 3, setup: replacedStatic, req: asMember(heartbeatRequest, 0, nil), codes: []int16{codeFencedInstance}},
		{name: "member of a consumer group", setup: consumerGroup(1), req: asMember(heartbeatRequest, 0, nil), codes: []int16{codeUnknownMember}},
		{name: "not coordinator", scene: twoBrokers, setup: steps(coordinatedElsewhere, stableOn(2)), req: asMember(heartbeatRequest, 0, nil), codes: []int16{codeNotCoordinator}},
		{name: "coordinator shut down", setup: steps(stable(1), coordinatorClosed), req: asMember(heartbeatRequest, 0, nil), codes: []int16{codeCoordinatorNA}},
	})
}

// stableOn forms a Stable group of one member on broker id (the
// coordinator of s.group) and leaves the scene's requests going where
// they went.
func stableOn(id int32) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		b := s.testBroker
		s.testBroker = s.brokers[id-1]
		stable(1)(t, s)
		s.testBroker = b
	}
}

// leaveAs is the LeaveGroup of s.members[i] (one member: v0-2 name it
// once, v3+ in the list), changed by mod.
func leaveAs(mod func(*kmsg.LeaveGroupRequest), members ...int) func(*testing.T, *scene) kmsg.Request {
	return func(_ *testing.T, s *scene) kmsg.Request {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group = s.group
		for _, i := range members {
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID, m.InstanceID = s.members[i].id, s.members[i].instance
			req.Members = append(req.Members, m)
		}
		req.MemberID = req.Members[0].MemberID
		if mod != nil {
			mod(req)
		}
		return req
	}
}

// wantState checks the state DescribeGroups shows for s.group.
func wantState(t *testing.T, s *scene, state string) {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{s.group}
	g := s.send(t, req, 5).(*kmsg.DescribeGroupsResponse).Groups[0]
	if g.ErrorCode != 0 || g.State != state {
		t.Fatalf("group %s: %v, state %s; want %s", s.group, kerr.ErrorForCode(g.ErrorCode), g.State, state)
	}
}

func TestLeaveGroup(t *testing.T) {
	state := func(st string) func(*testing.T, *scene, *kmsg.LeaveGroupResponse) {
		return func(t *testing.T, s *scene, _ *kmsg.LeaveGroupResponse) { wantState(t, s, st) }
	}
	// v0-2 answer one code; v3+ one per member.
	one := func(code int16) []int16 { return []int16{code} }
	runRows(t, tableOpts{groups: true, codes: errorCodes}, []apiRow[*kmsg.LeaveGroupResponse]{
		{name: "last member leaves", setup: stable(1), req: leaveAs(nil, 0), codes: nil, want: state("Empty")},
		{name: "a member leaves", setup: stable(2), req: leaveAs(nil, 1), want: state("PreparingRebalance")},
		{name: "unknown member", versions: []int16{0, 2}, setup: stable(1), req: leaveAs(func(r *kmsg.LeaveGroupRequest) { r.MemberID = "nobody" }, 0), codes: one(codeUnknownMember)},
		{
			name: "unknown member", since: 3, setup: stable(1),
			req:   leaveAs(func(r *kmsg.LeaveGroupRequest) { r.Members[0].MemberID = "nobody" }, 0),
			codes: []int16{0, codeUnknownMember}, want: state("Stable"),
		},
		{name: "unknown group", versions: []int16{0}, setup: stable(1), req: leaveAs(func(r *kmsg.LeaveGroupRequest) { r.Group = "nope" }, 0), codes: one(codeUnknownMember)},
		{name: "unknown group", since: 3, setup: stable(1), req: leaveAs(func(r *kmsg.LeaveGroupRequest) { r.Group = "nope" }, 0), codes: []int16{0, codeUnknownMember}},
		{name: "empty group id", setup: stable(1), req: leaveAs(func(r *kmsg.LeaveGroupRequest) { r.Group = "" }, 0), codes: one(codeInvalidGroupID)},
		{
			name: "batch", since: 3, setup: stable(2),
			req:   leaveAs(func(r *kmsg.LeaveGroupRequest) { r.Members[1].MemberID = "nobody" }, 0, 1),
			codes: []int16{0, 0, codeUnknownMember}, want: state("PreparingRebalance"),
		},
		{
			name: "static member by instance id", since: 3, setup: stableStatic(1),
			req: leaveAs(func(r *kmsg.LeaveGroupRequest) { r.Members[0].MemberID = "" }, 0),
			want: func(t *testing.T, s *scene, r *kmsg.LeaveGroupResponse) {
				if r.Members[0].MemberID != s.members[0].id {
					t.Fatalf("answered member id %q, want %q", r.Members[0].MemberID, s.members[0].id)
				}
				wantState(t, s, "Empty")
			},
		},
		{name: "fenced static member", since: 3, setup: replacedStatic, req: leaveAs(nil, 0), codes: []int16{0, codeFencedInstance}},
		{name: "not coordinator", scene: twoBrokers, setup: steps(coordinatedElsewhere, stableOn(2)), req: leaveAs(nil, 0), codes: one(codeNotCoordinator)},
		{name: "coordinator shut down", setup: steps(stable(1), coordinatorClosed), req: leaveAs(nil, 0), codes: one(codeCoordinatorNA)},
	})
}

// syncAs is member i's SyncGroup (the leader's with an assignment for
// every member), changed by mod.
func syncAs(i int, mod func(*kmsg.SyncGroupRequest)) func(*testing.T, *scene) kmsg.Request {
	return func(_ *testing.T, s *scene) kmsg.Request {
		var assign map[string][]byte
		if i == 0 {
			assign = map[string][]byte{}
			for _, m := range s.members {
				assign[m.id] = assignmentOf(m.id)
			}
		}
		req := syncRequest(s.group, s.members[i], assign)
		if mod != nil {
			mod(req)
		}
		return req
	}
}

func TestSyncGroup(t *testing.T) {
	assigned := func(t *testing.T, s *scene, r *kmsg.SyncGroupResponse) {
		if string(r.MemberAssignment) != string(assignmentOf(s.members[0].id)) {
			t.Fatalf("assignment %q", r.MemberAssignment)
		}
		if r.Version >= 5 && (r.Protocol == nil || *r.Protocol != "range" || r.ProtocolType == nil || *r.ProtocolType != "consumer") {
			t.Fatalf("v5 answer %+v", r)
		}
	}
	runRows(t, tableOpts{groups: true, codes: errorCodes}, []apiRow[*kmsg.SyncGroupResponse]{
		{
			name: "leader assigns", setup: awaitingSync(1), req: syncAs(0, nil),
			want: func(t *testing.T, s *scene, r *kmsg.SyncGroupResponse) {
				assigned(t, s, r)
				wantState(t, s, "Stable")
			},
		},
		{name: "stable member syncs again", setup: stable(1), req: syncAs(0, func(r *kmsg.SyncGroupRequest) { r.GroupAssignment = nil }), want: assigned},
		{name: "static leader", since: 3, setup: stableStatic(1), req: syncAs(0, nil), want: assigned},
		{name: "empty group id", setup: awaitingSync(1), req: syncAs(0, func(r *kmsg.SyncGroupRequest) { r.Group = "" }), codes: []int16{codeInvalidGroupID}},
		{name: "unknown group", setup: awaitingSync(1), req: syncAs(0, func(r *kmsg.SyncGroupRequest) { r.Group = "nope" }), codes: []int16{codeUnknownMember}},
		{name: "unknown member", setup: awaitingSync(1), req: syncAs(0, func(r *kmsg.SyncGroupRequest) { r.MemberID = "nobody" }), codes: []int16{codeUnknownMember}},
		{name: "illegal generation", setup: awaitingSync(1), req: syncAs(0, func(r *kmsg.SyncGroupRequest) { r.Generation++ }), codes: []int16{codeIllegalGeneration}},
		{name: "rebalance in progress", setup: rebalancing, req: syncAs(0, nil), codes: []int16{codeRebalancing}},
		{
			name: "other protocol", since: 5, setup: awaitingSync(1), codes: []int16{codeInconsistentProto},
			req: syncAs(0, func(r *kmsg.SyncGroupRequest) { r.Protocol = kmsg.StringPtr("roundrobin") }),
		},
		{
			name: "other protocol type", since: 5, setup: awaitingSync(1), codes: []int16{codeInconsistentProto},
			req: syncAs(0, func(r *kmsg.SyncGroupRequest) { r.ProtocolType = kmsg.StringPtr("connect") }),
		},
		{name: "fenced static member", since: 3, setup: replacedStatic, req: syncAs(0, nil), codes: []int16{codeFencedInstance}},
		{name: "member of a consumer group", setup: consumerGroup(1), req: syncAs(0, nil), codes: []int16{codeUnknownMember}},
		{name: "not coordinator", scene: twoBrokers, setup: steps(coordinatedElsewhere, stableOn(2)), req: syncAs(0, nil), codes: []int16{codeNotCoordinator}},
		{name: "coordinator shut down", setup: steps(awaitingSync(1), coordinatorClosed), req: syncAs(0, nil), codes: []int16{codeCoordinatorNA}},
	})
}
