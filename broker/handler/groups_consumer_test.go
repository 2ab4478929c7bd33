package handler

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Tables of the KIP-848 consumer group protocol: ConsumerGroupHeartbeat
// and ConsumerGroupDescribe; and flows of members sharing partitions.

// cgJoinRequest is a member's joining heartbeat (epoch 0), subscribing
// to topic t; v0 leaves the member id to the coordinator.
func cgJoinRequest(group, member string, instance *string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.InstanceID = group, member, instance
	req.RebalanceTimeoutMillis = rebalanceMs
	req.SubscribedTopicNames = []string{"t"}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req
}

// cgHeartbeatRequest is a member's regular heartbeat: its epoch and the
// partitions it owns, the rest unchanged.
func cgHeartbeatRequest(group string, m *groupMember) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = group, m.id, m.gen, m.instance
	req.Topics = slices.Clone(m.owned)
	if req.Topics == nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	return req
}

// cgSend sends a member's heartbeat at version v and takes the epoch and
// assignment it answers.
func (s *scene) cgSend(t *testing.T, v int16, m *groupMember, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	r := s.send(t, req, v).(*kmsg.ConsumerGroupHeartbeatResponse)
	if r.ErrorCode != 0 {
		return r
	}
	if r.MemberID != nil {
		m.id = *r.MemberID
	}
	m.gen = r.MemberEpoch
	if r.Assignment != nil {
		m.owned = nil
		for _, at := range r.Assignment.Topics {
			ot := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			ot.TopicID, ot.Partitions = at.TopicID, slices.Sorted(slices.Values(at.Partitions))
			m.owned = append(m.owned, ot)
		}
	}
	return r
}

// cgHeartbeat is member m's regular heartbeat at the latest version; it
// must succeed.
func (s *scene) cgHeartbeat(t *testing.T, m *groupMember) {
	t.Helper()
	if r := s.cgSend(t, 1, m, cgHeartbeatRequest(s.group, m)); r.ErrorCode != 0 {
		t.Fatalf("heartbeat of %s at epoch %d: %v", m.id, m.gen, kerr.ErrorForCode(r.ErrorCode))
	}
}

// cgJoin has a new member join s.group at the latest version.
func (s *scene) cgJoin(t *testing.T, id string, instance *string) *groupMember {
	t.Helper()
	m := &groupMember{id: id, instance: instance}
	if r := s.cgSend(t, 1, m, cgJoinRequest(s.group, id, instance)); r.ErrorCode != 0 {
		t.Fatalf("join of %s: %v", id, kerr.ErrorForCode(r.ErrorCode))
	}
	return m
}

// settle heartbeats every member until a round changes no epoch and no
// assignment.
func (s *scene) settle(t *testing.T) {
	t.Helper()
	for range 10 {
		changed := false
		for _, m := range s.members {
			gen, owned := m.gen, fmt.Sprint(m.owned)
			s.cgHeartbeat(t, m)
			changed = changed || gen != m.gen || owned != fmt.Sprint(m.owned)
		}
		if !changed {
			return
		}
	}
	t.Fatal("group did not settle within 10 rounds")
}

// ownedOf counts the partitions a member owns.
func ownedOf(m *groupMember) int {
	n := 0
	for _, ot := range m.owned {
		n += len(ot.Partitions)
	}
	return n
}

// withPartitions creates topic t with n partitions.
func withPartitions(n int32) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		if _, ok := s.env.Cache.Topic("t"); !ok {
			s.createTopic(t, "t", n, nil)
		}
	}
}

// cgPartitions are the partitions of topic t that consumerGroup creates.
const cgPartitions = 2

// consumerGroup forms a settled KIP-848 group of n members (m0, m1, …)
// sharing topic t (created with cgPartitions partitions if missing).
func consumerGroup(n int) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) { s.formConsumerGroup(t, n, false) }
}

// consumerGroupStatic is consumerGroup of static members (instance ids
// i0, i1, …).
func consumerGroupStatic(n int) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) { s.formConsumerGroup(t, n, true) }
}

func (s *scene) formConsumerGroup(t *testing.T, n int, static bool) {
	t.Helper()
	withPartitions(cgPartitions)(t, s)
	s.members = nil
	for i := range n {
		var inst *string
		if static {
			inst = instanceID(i)
		}
		s.members = append(s.members, s.cgJoin(t, fmt.Sprintf("m%d", i), inst))
	}
	s.settle(t)
}

// cgJoinAs is a new member's join (v0: no member id), changed by mod.
func cgJoinAs(mod func(*kmsg.ConsumerGroupHeartbeatRequest)) func(*testing.T, *scene) kmsg.Request {
	return func(_ *testing.T, s *scene) kmsg.Request {
		id := "new"
		if s.version == 0 {
			id = ""
		}
		req := cgJoinRequest(s.group, id, nil)
		if mod != nil {
			mod(req)
		}
		return req
	}
}

func TestConsumerGroupHeartbeat(t *testing.T) {
	topic := withPartitions(2)
	invalid := []int16{codeInvalidRequest}
	runRows(t, tableOpts{groups: true, codes: errorCodes}, []apiRow[*kmsg.ConsumerGroupHeartbeatResponse]{
		{
			name: "join", setup: topic, req: cgJoinAs(nil),
			want: func(t *testing.T, s *scene, r *kmsg.ConsumerGroupHeartbeatResponse) {
				if r.MemberID == nil || *r.MemberID == "" || (r.Version >= 1 && *r.MemberID != "new") {
					t.Fatalf("member id %v", msgString(r.MemberID))
				}
				if r.MemberEpoch != 1 || r.HeartbeatIntervalMillis != 5000 {
					t.Fatalf("epoch %d, heartbeat interval %d", r.MemberEpoch, r.HeartbeatIntervalMillis)
				}
				if r.Assignment == nil || len(r.Assignment.Topics) != 1 || r.Assignment.Topics[0].TopicID != s.topicID("t") ||
					!slices.Equal(slices.Sorted(slices.Values(r.Assignment.Topics[0].Partitions)), []int32{0, 1}) {
					t.Fatalf("assignment %+v, want t-0 and t-1", r.Assignment)
				}
			},
		},
		{name: "join with the range assignor", setup: topic, req: cgJoinAs(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("range") })},
		{name: "join with a regex", since: 1, setup: topic, req: cgJoinAs(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, kmsg.StringPtr("t.*")
		})},
		{
			name: "heartbeat", setup: consumerGroup(2), req: asMember(cgHeartbeatRequest, 1, nil),
			want: func(t *testing.T, s *scene, r *kmsg.ConsumerGroupHeartbeatResponse) {
				if r.MemberEpoch != s.members[1].gen || r.Assignment != nil {
					t.Fatalf("a settled member's heartbeat answered %+v", r)
				}
			},
		},
		{name: "empty group id", req: cgJoinAs(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }), codes: invalid},
		{name: "join without a subscription", req: cgJoinAs(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }), codes: invalid},
		{name: "join without a rebalance timeout", req: cgJoinAs(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }), codes: invalid},
		{
			name: "join owning partitions", setup: topic, codes: invalid,
			req: func(t *testing.T, s *scene) kmsg.Request {
				req := cgJoinAs(nil)(t, s).(*kmsg.ConsumerGroupHeartbeatRequest)
				owned := kmsg.NewConsumerGroupHeartbeatRequestTopic()
				owned.TopicID, owned.Partitions = s.topicID("t"), []int32{0}
				req.Topics = append(req.Topics, owned)
				return req
			},
		},
		{name: "join without a member id", since: 1, req: cgJoinAs(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }), codes: invalid},
		{name: "join with a member id", versions: []int16{0}, req: cgJoinAs(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "mine" }), codes: invalid},
		{name: "empty instance id", req: cgJoinAs(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("") }), codes: invalid},
		{name: "empty rack", req: cgJoinAs(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RackID = kmsg.StringPtr("") }), codes: invalid},
		{name: "invalid regex", since: 1, req: cgJoinAs(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr("(") }), codes: invalid},
		{name: "epoch below -2", setup: consumerGroup(1), req: asMember(cgHeartbeatRequest, 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }), codes: invalid},
		{
			name: "unknown assignor", codes: []int16{codeUnsupportedAssignor},
			req: cgJoinAs(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }),
		},
		{name: "unknown member", setup: consumerGroup(1), req: asMember(cgHeartbeatRequest, 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "nobody" }), codes: []int16{codeUnknownMember}},
		{name: "unknown group", setup: consumerGroup(1), req: asMember(cgHeartbeatRequest, 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "nope" }), codes: []int16{codeUnknownMember}},
		{name: "epoch ahead", setup: consumerGroup(1), req: asMember(cgHeartbeatRequest, 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch++ }), codes: []int16{codeFencedMemberEpoch}},
		{
			// One epoch behind is accepted only while the member owns
			// no more than it is assigned.
			name: "epoch behind owning too much", setup: revokedOnce,
			req: func(t *testing.T, s *scene) kmsg.Request {
				req := asMember(cgHeartbeatRequest, 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 1 })(t, s).(*kmsg.ConsumerGroupHeartbeatRequest)
				all := kmsg.NewConsumerGroupHeartbeatRequestTopic()
				all.TopicID, all.Partitions = s.topicID("t"), []int32{0, 1}
				req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{all}
				return req
			},
			codes: []int16{codeFencedMemberEpoch},
		},
		{
			name: "epoch behind owning a subset", setup: revokedOnce,
			req: asMember(cgHeartbeatRequest, 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 1 }),
			want: func(t *testing.T, _ *scene, r *kmsg.ConsumerGroupHeartbeatResponse) {
				if r.MemberEpoch != 2 {
					t.Fatalf("answered epoch %d, want the current 2", r.MemberEpoch)
				}
			},
		},
		{
			name: "leave", setup: consumerGroup(1), req: asMember(cgHeartbeatRequest, 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -1 }),
			want: func(t *testing.T, s *scene, r *kmsg.ConsumerGroupHeartbeatResponse) {
				if r.MemberEpoch != -1 {
					t.Fatalf("leave answered epoch %d", r.MemberEpoch)
				}
				wantConsumerGroupState(t, s, "Empty")
			},
		},
		{name: "unknown member leaves", setup: consumerGroup(1), req: asMember(cgHeartbeatRequest, 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.MemberEpoch = "nobody", -1 }), codes: []int16{codeUnknownMember}},
		{
			name: "static member leaves for a restart", setup: consumerGroupStatic(1),
			req: asMember(cgHeartbeatRequest, 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }),
			want: func(t *testing.T, s *scene, r *kmsg.ConsumerGroupHeartbeatResponse) {
				if r.MemberEpoch != -2 {
					t.Fatalf("temporary leave answered epoch %d", r.MemberEpoch)
				}
				// The restarted member takes its place and partitions.
				back := s.cgJoin(t, "restarted", instanceID(0))
				if back.gen != s.members[0].gen || ownedOf(back) != cgPartitions {
					t.Fatalf("restarted at epoch %d owning %d, want %d owning all", back.gen, ownedOf(back), s.members[0].gen)
				}
			},
		},
		{
			name: "instance id in use", setup: consumerGroupStatic(1), codes: []int16{codeUnreleasedInstance},
			req: cgJoinAs(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = instanceID(0) }),
		},
		{
			name: "replaced static member", codes: []int16{codeFencedInstance},
			setup: steps(consumerGroupStatic(1), func(t *testing.T, s *scene) {
				m := s.members[0]
				if r := s.send(t, asMember(cgHeartbeatRequest, 0, func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 })(t, s), 1).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != 0 {
					t.Fatalf("temporary leave: %v", kerr.ErrorForCode(r.ErrorCode))
				}
				s.cgJoin(t, "restarted", m.instance)
			}),
			req: asMember(cgHeartbeatRequest, 0, nil),
		},
		{name: "classic group with members", setup: stable(1), req: cgJoinAs(nil), codes: []int16{codeGroupNotFound}},
		{
			name: "empty classic group becomes a consumer group", setup: steps(topic, stable(1), leaveGroupOf(0)), req: cgJoinAs(nil),
			want: func(t *testing.T, s *scene, _ *kmsg.ConsumerGroupHeartbeatResponse) {
				wantConsumerGroupState(t, s, "Stable")
			},
		},
		{
			name: "group full", scene: sceneOpts{config: map[string]string{"group.max.size": "1"}}, setup: consumerGroup(1),
			req: cgJoinAs(nil), codes: []int16{codeGroupMaxSize},
		},
		{name: "not coordinator", scene: twoBrokers, setup: coordinatedElsewhere, req: cgJoinAs(nil), codes: []int16{codeNotCoordinator}},
		{name: "coordinator shut down", setup: coordinatorClosed, req: cgJoinAs(nil), codes: []int16{codeCoordinatorNA}},
	})
}

// revokedOnce forms a group of m0 at epoch 1 owning all of t, has m1
// join, and m0 give up its share: m0 is then at epoch 2, its previous
// epoch 1.
func revokedOnce(t *testing.T, s *scene) {
	consumerGroup(1)(t, s)
	s.members = append(s.members, s.cgJoin(t, "m1", nil))
	m0 := s.members[0]
	s.cgHeartbeat(t, m0) // told to give up partitions
	s.cgHeartbeat(t, m0) // gave them up
	if m0.gen != 2 || ownedOf(m0) != cgPartitions/2 {
		t.Fatalf("m0 at epoch %d owning %d, want epoch 2 owning half", m0.gen, ownedOf(m0))
	}
}

// leaveGroupOf has classic member i leave s.group.
func leaveGroupOf(i int) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		if r := s.send(t, leaveAs(nil, i)(t, s), 5).(*kmsg.LeaveGroupResponse); r.ErrorCode != 0 || r.Members[0].ErrorCode != 0 {
			t.Fatalf("leave: %+v", r)
		}
	}
}

// describeConsumerGroup describes s.group through ConsumerGroupDescribe.
func describeConsumerGroup(t *testing.T, s *scene) kmsg.ConsumerGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{s.group}
	g := s.send(t, req, 1).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
	if g.ErrorCode != 0 {
		t.Fatalf("describe %s: %v", s.group, kerr.ErrorForCode(g.ErrorCode))
	}
	return g
}

func wantConsumerGroupState(t *testing.T, s *scene, state string) {
	t.Helper()
	if g := describeConsumerGroup(t, s); g.State != state {
		t.Fatalf("group %s is %s, want %s", s.group, g.State, state)
	}
}

// cgDescribeReq describes s.group and the named other groups.
func cgDescribeReq(others ...string) func(*testing.T, *scene) kmsg.Request {
	return namingGroups(func(groups []string) kmsg.Request {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups, req.IncludeAuthorizedOperations = groups, true
		return req
	}, others...)
}

func TestConsumerGroupDescribe(t *testing.T) {
	notFound := []int16{codeGroupNotFound}
	runRows(t, tableOpts{groups: true, codes: errorCodes}, []apiRow[*kmsg.ConsumerGroupDescribeResponse]{
		{
			name: "group", setup: consumerGroup(2), req: cgDescribeReq(),
			want: func(t *testing.T, s *scene, r *kmsg.ConsumerGroupDescribeResponse) {
				g := r.Groups[0]
				if g.State != "Stable" || g.Epoch != 2 || g.AssignmentEpoch != 2 || g.AssignorName != "uniform" || len(g.Members) != 2 || g.AuthorizedOperations != groupOperations {
					t.Fatalf("described %+v", g)
				}
				total := 0
				for i, m := range g.Members {
					if m.MemberID != s.members[i].id || m.MemberEpoch != 2 || !slices.Equal(m.SubscribedTopics, []string{"t"}) {
						t.Fatalf("member %d described %+v", i, m)
					}
					if r.Version >= 1 && m.MemberType != 1 {
						t.Fatalf("member type %d", m.MemberType)
					}
					for _, tp := range m.Assignment.TopicPartitions {
						if tp.Topic != "t" || tp.TopicID != s.topicID("t") {
							t.Fatalf("assigned topic %+v", tp)
						}
						total += len(tp.Partitions)
					}
				}
				if total != cgPartitions {
					t.Fatalf("%d partitions assigned, want all %d", total, cgPartitions)
				}
			},
		},
		{name: "unknown group", req: cgDescribeReq(), codes: notFound},
		{name: "classic group", setup: stable(1), req: cgDescribeReq(), codes: notFound},
		{name: "several groups", setup: consumerGroup(1), req: cgDescribeReq("nope"), codes: []int16{0, codeGroupNotFound}},
		{
			name: "empty group id", req: func(*testing.T, *scene) kmsg.Request {
				req := kmsg.NewPtrConsumerGroupDescribeRequest()
				req.Groups = []string{""}
				return req
			},
			codes: []int16{codeInvalidGroupID},
		},
		{name: "not coordinator", scene: twoBrokers, setup: coordinatedElsewhere, req: cgDescribeReq(), codes: []int16{codeNotCoordinator}},
	})
}

// TestConsumerGroupRebalance: a member owning every partition is joined
// by a second; the coordinator takes partitions from the first before it
// gives them to the second, so that no partition is ever owned twice,
// and the leaver's partitions go to the one that stays.
func TestConsumerGroupRebalance(t *testing.T) {
	for _, v := range []int16{0, 1} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newScene(t, sceneOpts{groups: true}, 0)
				withPartitions(4)(t, s)
				a := &groupMember{id: "a"}
				b := &groupMember{id: "b"}
				if v == 0 {
					a.id, b.id = "", ""
				}
				s.cgSend(t, v, a, cgJoinRequest(s.group, a.id, nil))
				if a.gen != 1 || ownedOf(a) != 4 {
					t.Fatalf("first member at epoch %d owns %d", a.gen, ownedOf(a))
				}
				s.cgSend(t, v, b, cgJoinRequest(s.group, b.id, nil))
				if ownedOf(b) != 0 {
					t.Fatalf("second member got %d partitions before the first revoked them", ownedOf(b))
				}
				s.members = []*groupMember{a, b}
				for range 10 {
					for _, m := range s.members {
						if r := s.cgSend(t, v, m, cgHeartbeatRequest(s.group, m)); r.ErrorCode != 0 {
							t.Fatalf("heartbeat of %s: %v", m.id, kerr.ErrorForCode(r.ErrorCode))
						}
						wantDisjoint(t, a, b)
					}
				}
				if ownedOf(a) != 2 || ownedOf(b) != 2 || a.gen != 2 || b.gen != 2 {
					t.Fatalf("settled as a: epoch %d owning %d, b: epoch %d owning %d", a.gen, ownedOf(a), b.gen, ownedOf(b))
				}
				leave := cgHeartbeatRequest(s.group, a)
				leave.MemberEpoch = -1
				if r := s.send(t, leave, v).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != 0 || r.MemberEpoch != -1 {
					t.Fatalf("leave: %+v", r)
				}
				s.members = []*groupMember{b}
				s.settle(t)
				if ownedOf(b) != 4 || b.gen != 3 {
					t.Fatalf("after the leave b is at epoch %d owning %d", b.gen, ownedOf(b))
				}
			})
		})
	}
}

// wantDisjoint fails if two members own the same partition.
func wantDisjoint(t *testing.T, ms ...*groupMember) {
	t.Helper()
	seen := map[string]string{}
	for _, m := range ms {
		for _, ot := range m.owned {
			for _, p := range ot.Partitions {
				k := fmt.Sprintf("%x-%d", ot.TopicID, p)
				if o, ok := seen[k]; ok {
					t.Fatalf("partition %d owned by %s and %s", p, o, m.id)
				}
				seen[k] = m.id
			}
		}
	}
}

// TestConsumerGroupSessionTimeout: a member that stops heartbeating is
// removed after group.consumer.session.timeout.ms and its partitions go
// to the member that kept heartbeating.
func TestConsumerGroupSessionTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScene(t, sceneOpts{groups: true}, 0)
		consumerGroup(2)(t, s)
		a, b := s.members[0], s.members[1]
		for range 10 { // 50 s: a's session of 45 s ends
			s.cgHeartbeat(t, b)
			s.sleep(5 * time.Second)
		}
		s.members = []*groupMember{b}
		s.settle(t)
		if ownedOf(b) != cgPartitions {
			t.Fatalf("the remaining member owns %d partitions", ownedOf(b))
		}
		if r := s.send(t, cgHeartbeatRequest(s.group, a), 1).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != codeUnknownMember {
			t.Fatalf("expired member's heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	})
}

// TestConsumerGroupRevocationTimeout: a member that keeps heartbeating
// but does not give up its partitions within its rebalance timeout is
// removed, and the others get them.
func TestConsumerGroupRevocationTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScene(t, sceneOpts{groups: true}, 0)
		consumerGroup(1)(t, s)
		a := s.members[0]
		stuck := slices.Clone(a.owned)
		b := s.cgJoin(t, "m1", nil)
		s.cgHeartbeat(t, a) // told to revoke
		a.owned = stuck     // but keeps reporting everything
		for range 5 {       // 25 s, past the rebalance timeout of 20 s
			s.sleep(5 * time.Second)
			s.cgHeartbeat(t, b)
			if code := s.cgSend(t, 1, a, cgHeartbeatRequest(s.group, a)).ErrorCode; code != 0 {
				if code != codeUnknownMember {
					t.Fatalf("stuck member's heartbeat: %v", kerr.ErrorForCode(code))
				}
				s.members = []*groupMember{b}
				s.settle(t)
				if ownedOf(b) != cgPartitions {
					t.Fatalf("the remaining member owns %d partitions", ownedOf(b))
				}
				return
			}
			a.owned = stuck
		}
		t.Fatal("a member that never revoked is still in the group")
	})
}
