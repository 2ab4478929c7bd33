package handler

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/txn"
)

// Tables of the group admin APIs: FindCoordinator, DescribeGroups,
// ListGroups, DeleteGroups.

// findReq asks for the coordinators of keys (v0-3: the first) of a type
// (0 group, 1 transaction).
func findReq(keyType int8, keys ...string) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = keyType, keys[0], keys
		return req
	}
}

// coordinators are the answers of a FindCoordinator, whatever its
// version.
func coordinators(r *kmsg.FindCoordinatorResponse) []kmsg.FindCoordinatorResponseCoordinator {
	if r.Version >= 4 {
		return r.Coordinators
	}
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.ErrorCode, c.NodeID, c.Host, c.Port = r.ErrorCode, r.NodeID, r.Host, r.Port
	return []kmsg.FindCoordinatorResponseCoordinator{c}
}

func findCodes(r *kmsg.FindCoordinatorResponse) []int16 {
	var out []int16
	for _, c := range coordinators(r) {
		out = append(out, c.ErrorCode)
	}
	return out
}

// coordinatedBy checks that each answer names broker ids[i] as
// registered (host 127.0.0.1, port 9092+id).
func coordinatedBy(ids ...int32) func(*testing.T, *scene, *kmsg.FindCoordinatorResponse) {
	return func(t *testing.T, _ *scene, r *kmsg.FindCoordinatorResponse) {
		for i, c := range coordinators(r) {
			if c.NodeID != ids[i] || c.Host != "127.0.0.1" || c.Port != 9092+ids[i] {
				t.Fatalf("coordinator %d is %d at %s:%d, want broker %d", i, c.NodeID, c.Host, c.Port, ids[i])
			}
		}
	}
}

func TestFindCoordinator(t *testing.T) {
	// byBroker asks for a group each broker coordinates, in broker order.
	byBroker := func(t *testing.T, s *scene) kmsg.Request {
		return findReq(0, s.groupLedBy(t, 1), s.groupLedBy(t, 2))(t, s)
	}
	runRows(t, tableOpts{codes: codesOf(findCodes)}, []apiRow[*kmsg.FindCoordinatorResponse]{
		{
			name: "creates the offsets topic", req: findReq(0, "g"),
			scene: sceneOpts{config: map[string]string{"offsets.topic.num.partitions": "3"}},
			want: func(t *testing.T, s *scene, r *kmsg.FindCoordinatorResponse) {
				coordinatedBy(1)(t, s, r)
				topic, ok := s.env.Cache.Topic(group.TopicName)
				if !ok || len(topic.Partitions) != 3 || topic.Configs["cleanup.policy"] != "compact" {
					t.Fatalf("%s: %+v", group.TopicName, topic)
				}
			},
		},
		{
			name: "replication factor clamped to the live brokers", scene: sceneOpts{brokers: 2, config: map[string]string{"offsets.topic.replication.factor": "3"}},
			req: findReq(0, "g"),
			want: func(t *testing.T, s *scene, _ *kmsg.FindCoordinatorResponse) {
				if st, _ := s.env.Cache.Partition(group.TopicName, 0); len(st.Replicas) != 2 {
					t.Fatalf("replicas %v, want 2", st.Replicas)
				}
			},
		},
		{name: "existing offsets topic", scene: sceneOpts{groups: true}, req: findReq(0, "g"), want: coordinatedBy(1)},
		{
			name: "group coordinated elsewhere", scene: sceneOpts{brokers: 2, groups: true},
			req: func(t *testing.T, s *scene) kmsg.Request { return findReq(0, s.groupLedBy(t, 2))(t, s) }, want: coordinatedBy(2),
		},
		{name: "batched keys", since: 4, scene: sceneOpts{brokers: 2, groups: true}, req: byBroker, want: coordinatedBy(1, 2)},
		{
			name: "coordinator not live", scene: sceneOpts{brokers: 2, groups: true},
			setup: func(t *testing.T, s *scene) { s.backend.ExpireBroker(2) },
			req:   byBroker, since: 4, codes: []int16{0, codeCoordinatorNA}, want: func(t *testing.T, s *scene, r *kmsg.FindCoordinatorResponse) {
				if c := r.Coordinators[1]; c.NodeID != -1 || c.Port != -1 {
					t.Fatalf("answered %+v for a coordinator that is not live", c)
				}
			},
		},
		{
			name: "a transaction key creates the transaction topic", since: 1, req: findReq(1, "txn"),
			scene: sceneOpts{config: map[string]string{"transaction.state.log.num.partitions": "3"}},
			want: func(t *testing.T, s *scene, r *kmsg.FindCoordinatorResponse) {
				coordinatedBy(1)(t, s, r)
				topic, ok := s.env.Cache.Topic(txn.TopicName)
				if !ok || len(topic.Partitions) != 3 || topic.Configs["cleanup.policy"] != "compact" {
					t.Fatalf("%s: %+v", txn.TopicName, topic)
				}
			},
		},
		{name: "unknown key type", since: 1, req: findReq(5, "g"), codes: []int16{codeInvalidRequest}},
	})
}

// namingGroups is a row's request naming s.group and the other groups,
// as build makes it.
func namingGroups(build func(groups []string) kmsg.Request, others ...string) func(*testing.T, *scene) kmsg.Request {
	return func(_ *testing.T, s *scene) kmsg.Request { return build(append([]string{s.group}, others...)) }
}

// describeGroupsReq describes s.group and the named other groups.
func describeGroupsReq(others ...string) func(*testing.T, *scene) kmsg.Request {
	return namingGroups(func(groups []string) kmsg.Request {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups, req.IncludeAuthorizedOperations = groups, true
		return req
	}, others...)
}

// describedAs checks the first group's state and member count.
func describedAs(state string, members int) func(*testing.T, *scene, *kmsg.DescribeGroupsResponse) {
	return func(t *testing.T, _ *scene, r *kmsg.DescribeGroupsResponse) {
		if g := r.Groups[0]; g.State != state || len(g.Members) != members {
			t.Fatalf("described as %s with %d members, want %s with %d", g.State, len(g.Members), state, members)
		}
	}
}

func TestDescribeGroups(t *testing.T) {
	runRows(t, tableOpts{groups: true, codes: errorCodes}, []apiRow[*kmsg.DescribeGroupsResponse]{
		{
			name: "stable group", setup: stableStatic(2), req: describeGroupsReq(),
			want: func(t *testing.T, s *scene, r *kmsg.DescribeGroupsResponse) {
				describedAs("Stable", 2)(t, s, r)
				g := r.Groups[0]
				if g.ProtocolType != "consumer" || g.Protocol != "range" {
					t.Fatalf("described %+v", g)
				}
				for _, m := range g.Members {
					i := slices.IndexFunc(s.members, func(sm *groupMember) bool { return sm.id == m.MemberID })
					if i < 0 || string(m.MemberAssignment) != string(assignmentOf(m.MemberID)) ||
						string(m.ProtocolMetadata) != string(consumerMetadata("t")) || m.ClientID != "handler-test" {
						t.Fatalf("member described as %+v", m)
					}
					if r.Version >= 4 && (m.InstanceID == nil || *m.InstanceID != *s.members[i].instance) {
						t.Fatalf("instance id %v", msgString(m.InstanceID))
					}
				}
				if ops := g.AuthorizedOperations; r.Version >= 3 && ops != groupOperations {
					t.Fatalf("authorized operations %b", ops)
				}
			},
		},
		{
			name: "awaiting sync", setup: awaitingSync(1), req: describeGroupsReq(),
			want: func(t *testing.T, s *scene, r *kmsg.DescribeGroupsResponse) {
				describedAs("CompletingRebalance", 1)(t, s, r)
				g := r.Groups[0]
				if m := g.Members[0]; g.Protocol != "" || len(m.ProtocolMetadata) != 0 || len(m.MemberAssignment) != 0 {
					t.Fatalf("protocol %q or metadata shown outside Stable: %+v", g.Protocol, m)
				}
				if g.ProtocolType != "consumer" {
					t.Fatalf("protocol type %q", g.ProtocolType)
				}
			},
		},
		{name: "empty group", setup: steps(stable(1), leaveGroupOf(0)), req: describeGroupsReq(), want: describedAs("Empty", 0)},
		{name: "unknown group", req: describeGroupsReq(), want: describedAs("Dead", 0)},
		{name: "consumer group", setup: consumerGroup(1), req: describeGroupsReq(), want: describedAs("Dead", 0)},
		{name: "several groups", setup: stable(1), req: describeGroupsReq("nope"), codes: []int16{0, 0}},
		{name: "not coordinator", scene: twoBrokers, setup: coordinatedElsewhere, req: describeGroupsReq(), codes: []int16{codeNotCoordinator}},
		{name: "coordinator shut down", setup: coordinatorClosed, req: describeGroupsReq(), codes: []int16{codeCoordinatorNA}},
	})
}

// listGroupsReq lists groups, filtered by states (v4+) and types (v5+).
func listGroupsReq(states, types []string) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrListGroupsRequest()
		req.StatesFilter, req.TypesFilter = states, types
		return req
	}
}

// listedGroups checks the groups listed, as "name/state/type" (the state
// is answered from v4 on, the type from v5 on).
func listedGroups(want ...string) func(*testing.T, *scene, *kmsg.ListGroupsResponse) {
	return func(t *testing.T, _ *scene, r *kmsg.ListGroupsResponse) {
		var got, exp []string
		for _, g := range r.Groups {
			got = append(got, g.Group+"/"+g.GroupState+"/"+g.GroupType)
		}
		for _, w := range want {
			f := strings.Split(w, "/")
			if r.Version < 4 {
				f[1] = ""
			}
			if r.Version < 5 {
				f[2] = ""
			}
			exp = append(exp, strings.Join(f, "/"))
		}
		if !slices.Equal(got, exp) {
			t.Fatalf("listed %v, want %v", got, exp)
		}
	}
}

func TestListGroups(t *testing.T) {
	// groups forms a Stable classic group c, an Empty classic group e and
	// a KIP-848 group k.
	groups := func(t *testing.T, s *scene) {
		for _, f := range []struct {
			name  string
			setup func(*testing.T, *scene)
		}{
			{"c", stable(1)}, {"e", steps(stable(1), leaveGroupOf(0))}, {"k", consumerGroup(1)},
		} {
			s.group = f.name
			f.setup(t, s)
		}
	}
	runRows(t, tableOpts{groups: true, codes: errorCodes}, []apiRow[*kmsg.ListGroupsResponse]{
		{name: "all", setup: groups, req: listGroupsReq(nil, nil), want: listedGroups("c/Stable/classic", "e/Empty/classic", "k/Stable/consumer")},
		{name: "none", req: listGroupsReq(nil, nil), want: listedGroups()},
		{name: "by state", since: 4, setup: groups, req: listGroupsReq([]string{"stable"}, nil), want: listedGroups("c/Stable/classic", "k/Stable/consumer")},
		{name: "by type", since: 5, setup: groups, req: listGroupsReq(nil, []string{"Consumer"}), want: listedGroups("k/Stable/consumer")},
		{
			name: "only the groups coordinated here", scene: twoBrokers, req: listGroupsReq(nil, nil),
			setup: steps(coordinatedElsewhere, stableOn(2)), want: listedGroups(),
		},
	})
}

// deleteGroupsReq deletes s.group and the named other groups.
func deleteGroupsReq(others ...string) func(*testing.T, *scene) kmsg.Request {
	return namingGroups(func(groups []string) kmsg.Request {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = groups
		return req
	}, others...)
}

func TestDeleteGroups(t *testing.T) {
	gone := func(t *testing.T, s *scene, _ *kmsg.DeleteGroupsResponse) {
		wantCommitted(true)(t, s)
		wantState(t, s, "Dead")
	}
	runRows(t, tableOpts{groups: true, codes: errorCodes}, []apiRow[*kmsg.DeleteGroupsResponse]{
		{name: "offsets-only group", setup: withOffsets, req: deleteGroupsReq(), want: gone},
		{name: "emptied group", setup: steps(withOffsets, stable(1), leaveGroupOf(0)), req: deleteGroupsReq(), want: gone},
		{name: "emptied consumer group", setup: steps(withOffsets, consumerGroup(1), cgLeave(0)), req: deleteGroupsReq(), want: gone},
		{
			name: "group with members", setup: steps(withOffsets, stable(1)), req: deleteGroupsReq(), codes: []int16{codeNonEmptyGroup},
			want: func(t *testing.T, s *scene, _ *kmsg.DeleteGroupsResponse) { wantCommitted(true, 0, 1)(t, s) },
		},
		{name: "consumer group with members", setup: consumerGroup(1), req: deleteGroupsReq(), codes: []int16{codeNonEmptyGroup}},
		{name: "unknown group", req: deleteGroupsReq(), codes: []int16{codeGroupNotFound}},
		{name: "several groups", setup: withOffsets, req: deleteGroupsReq("nope"), codes: []int16{0, codeGroupNotFound}},
		{name: "not coordinator", scene: twoBrokers, setup: steps(coordinatedElsewhere, stableOn(2)), req: deleteGroupsReq(), codes: []int16{codeNotCoordinator}},
		{name: "coordinator shut down", setup: coordinatorClosed, req: deleteGroupsReq(), codes: []int16{codeCoordinatorNA}},
	})
}

// cgLeave has KIP-848 member i leave s.group.
func cgLeave(i int) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		req := cgHeartbeatRequest(s.group, s.members[i])
		req.MemberEpoch = -1
		if r := s.send(t, req, 1).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != 0 {
			t.Fatalf("leave: %+v", r)
		}
	}
}
