package handler

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Tables of the committed-offset APIs: OffsetCommit, OffsetFetch,
// OffsetDelete.

// committed is one partition's commit: offset 10+p, leader epoch 3,
// metadata "meta-p".
func committed(p int32) (offset int64, epoch int32, metadata string) {
	return 10 + int64(p), 3, "meta-" + string(rune('0'+p))
}

// commitReq commits committed(p) for partitions of topic as member m (nil:
// a simple commit, generation -1 and no member id).
func commitReq(group string, m *groupMember, topic string, partitions ...int32) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	if m != nil {
		req.MemberID, req.Generation, req.InstanceID = m.id, m.gen, m.instance
	}
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		off, epoch, meta := committed(p)
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, off, epoch, kmsg.StringPtr(meta)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// commitAs is a row's OffsetCommit of t-0 and t-1 as member i (-1: a
// simple commit), changed by mod.
func commitAs(i int, mod func(*kmsg.OffsetCommitRequest)) func(*testing.T, *scene) kmsg.Request {
	return func(_ *testing.T, s *scene) kmsg.Request {
		var m *groupMember
		if i >= 0 {
			m = s.members[i]
		}
		req := commitReq(s.group, m, "t", 0, 1)
		if mod != nil {
			mod(req)
		}
		return req
	}
}

// withOffsets creates topics t and u (two partitions each) and commits
// t-0, t-1 and u-0 for s.group as simple commits.
func withOffsets(t *testing.T, s *scene) {
	withPartitions(2)(t, s)
	s.createTopic(t, "u", 2, nil)
	for _, req := range []*kmsg.OffsetCommitRequest{commitReq(s.group, nil, "t", 0, 1), commitReq(s.group, nil, "u", 0)} {
		wantCodes(t, errorCodes(s.send(t, req, 9).(*kmsg.OffsetCommitResponse)), nil)
	}
}

// fetchOffset reads back one partition's commit (admin OffsetFetch):
// offset -1 when there is none.
func (s *scene) fetchOffset(t *testing.T, topic string, p int32) kmsg.OffsetFetchResponseGroupTopicPartition {
	t.Helper()
	req := offsetFetchReq([]string{s.group}, map[string][]int32{topic: {p}})
	r := s.send(t, req, 9).(*kmsg.OffsetFetchResponse)
	if g := r.Groups[0]; g.ErrorCode != 0 || len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch %s-%d: %+v", topic, p, g)
	}
	return r.Groups[0].Topics[0].Partitions[0]
}

// wantCommitted checks which partitions of t hold committed(p), the
// others nothing.
func wantCommitted(withEpoch bool, partitions ...int32) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		t.Helper()
		for p := range int32(2) {
			got := s.fetchOffset(t, "t", p)
			off, epoch, meta := committed(p)
			if !containsPartition(partitions, p) {
				off, epoch, meta = -1, -1, ""
			} else if !withEpoch {
				epoch = -1
			}
			if got.Offset != off || got.LeaderEpoch != epoch || got.Metadata == nil || *got.Metadata != meta {
				t.Fatalf("t-%d holds offset %d, epoch %d, metadata %v; want %d, %d, %q", p, got.Offset, got.LeaderEpoch, msgString(got.Metadata), off, epoch, meta)
			}
		}
	}
}

func containsPartition(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

func TestOffsetCommit(t *testing.T) {
	topic := withPartitions(2)
	both := []int16{0, 0}
	// committedAt checks t-0 and t-1 hold their commits; leader epochs
	// are kept from v6 on.
	committedAt := func(t *testing.T, s *scene, r *kmsg.OffsetCommitResponse) {
		wantCommitted(r.Version >= 6, 0, 1)(t, s)
	}
	runRows(t, tableOpts{groups: true, codes: errorCodes}, []apiRow[*kmsg.OffsetCommitResponse]{
		{name: "simple commit", setup: topic, req: commitAs(-1, nil), codes: both, want: committedAt},
		{name: "member commit", since: 1, setup: steps(topic, stable(1)), req: commitAs(0, nil), codes: both, want: committedAt},
		{name: "member commit while preparing a rebalance", since: 1, setup: steps(topic, rebalancing), req: commitAs(0, nil), codes: both},
		{name: "static member commit", since: 7, setup: steps(topic, stableStatic(1)), req: commitAs(0, nil), codes: both},
		{name: "empty group id", setup: topic, req: commitAs(-1, func(r *kmsg.OffsetCommitRequest) { r.Group = "" }), codes: both},
		{
			name: "null metadata", setup: topic,
			req: commitAs(-1, func(r *kmsg.OffsetCommitRequest) {
				r.Topics[0].Partitions = r.Topics[0].Partitions[:1]
				r.Topics[0].Partitions[0].Metadata = nil
			}),
			codes: []int16{0},
			want: func(t *testing.T, s *scene, _ *kmsg.OffsetCommitResponse) {
				if got := s.fetchOffset(t, "t", 0); got.Metadata == nil || *got.Metadata != "" {
					t.Fatalf("null metadata read back as %v, want \"\"", msgString(got.Metadata))
				}
			},
		},
		{name: "unknown topic", setup: topic, req: commitAs(-1, func(r *kmsg.OffsetCommitRequest) { r.Topics[0].Topic = "nope" }), codes: []int16{codeUnknownTopic, codeUnknownTopic}},
		{
			name: "unknown partition", setup: topic, req: commitAs(-1, func(r *kmsg.OffsetCommitRequest) { r.Topics[0].Partitions[1].Partition = 7 }),
			codes: []int16{0, codeUnknownTopic},
			want:  func(t *testing.T, s *scene, r *kmsg.OffsetCommitResponse) { wantCommitted(r.Version >= 6, 0)(t, s) },
		},
		{
			name: "metadata too large", scene: sceneOpts{config: map[string]string{"offset.metadata.max.bytes": "8"}}, setup: topic,
			req: commitAs(-1, func(r *kmsg.OffsetCommitRequest) {
				r.Topics[0].Partitions[1].Metadata = kmsg.StringPtr(strings.Repeat("x", 9))
			}),
			codes: []int16{0, codeMetadataTooLarge},
		},
		{name: "unknown member", since: 1, setup: steps(topic, stable(1)), req: commitAs(0, func(r *kmsg.OffsetCommitRequest) { r.MemberID = "nobody" }), codes: []int16{codeUnknownMember, codeUnknownMember}},
		{name: "simple commit to an active group", since: 1, setup: steps(topic, stable(1)), req: commitAs(-1, nil), codes: []int16{codeUnknownMember, codeUnknownMember}},
		{name: "illegal generation", since: 1, setup: steps(topic, stable(1)), req: commitAs(0, func(r *kmsg.OffsetCommitRequest) { r.Generation++ }), codes: []int16{codeIllegalGeneration, codeIllegalGeneration}},
		{
			// Kafka answers GROUP_ID_NOT_FOUND from v9 on, ILLEGAL_GENERATION before.
			name: "generation of a missing group", versions: []int16{1, 8}, setup: topic,
			req: commitAs(-1, func(r *kmsg.OffsetCommitRequest) { r.MemberID, r.Generation = "nobody", 1 }), codes: []int16{codeIllegalGeneration, codeIllegalGeneration},
		},
		{
			name: "generation of a missing group", versions: []int16{9}, setup: topic,
			req: commitAs(-1, func(r *kmsg.OffsetCommitRequest) { r.MemberID, r.Generation = "nobody", 1 }), codes: []int16{codeGroupNotFound, codeGroupNotFound},
		},
		{name: "awaiting the assignment", since: 1, setup: steps(topic, awaitingSync(1)), req: commitAs(0, nil), codes: []int16{codeRebalancing, codeRebalancing}},
		{name: "fenced static member", since: 7, setup: steps(topic, replacedStatic), req: commitAs(0, nil), codes: []int16{codeFencedInstance, codeFencedInstance}},
		{name: "consumer group member", since: 9, setup: consumerGroup(1), req: commitAs(0, nil), codes: both, want: committedAt},
		{name: "consumer group member, stale epoch", since: 9, setup: consumerGroup(1), req: commitAs(0, func(r *kmsg.OffsetCommitRequest) { r.Generation-- }), codes: []int16{codeStaleMemberEpoch, codeStaleMemberEpoch}},
		{name: "consumer group member below v9", versions: []int16{1, 8}, setup: consumerGroup(1), req: commitAs(0, nil), codes: []int16{codeUnsupportedVersion, codeUnsupportedVersion}},
		{name: "unknown consumer group member", since: 9, setup: consumerGroup(1), req: commitAs(0, func(r *kmsg.OffsetCommitRequest) { r.MemberID = "nobody" }), codes: []int16{codeUnknownMember, codeUnknownMember}},
		{name: "not coordinator", scene: twoBrokers, setup: steps(coordinatedElsewhere, topic), req: commitAs(-1, nil), codes: []int16{codeNotCoordinator, codeNotCoordinator}},
		{name: "coordinator shut down", setup: steps(topic, coordinatorClosed), req: commitAs(-1, nil), codes: []int16{codeCoordinatorNA, codeCoordinatorNA}},
	})
}

// offsetFetchReq asks for the offsets of groups (v8+; v0-7 the first),
// topics nil asking for all.
func offsetFetchReq(groups []string, topics map[string][]int32) *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = groups[0]
	for name, ps := range topics {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = name, ps
		req.Topics = append(req.Topics, rt)
	}
	for _, g := range groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberEpoch = g, -1
		if topics != nil {
			rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
		}
		for name, ps := range topics {
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic, rt.Partitions = name, ps
			rg.Topics = append(rg.Topics, rt)
		}
		req.Groups = append(req.Groups, rg)
	}
	return req
}

// fetchOf is a row's OffsetFetch of t-0 and t-1, changed by mod.
func fetchOf(mod func(*testing.T, *scene, *kmsg.OffsetFetchRequest)) func(*testing.T, *scene) kmsg.Request {
	return func(t *testing.T, s *scene) kmsg.Request {
		req := offsetFetchReq([]string{s.group}, map[string][]int32{"t": {0, 1}})
		if mod != nil {
			mod(t, s, req)
		}
		return req
	}
}

// fetched are a response's groups, whatever its version.
func fetched(r *kmsg.OffsetFetchResponse) []kmsg.OffsetFetchResponseGroup {
	if r.Version >= 8 {
		return r.Groups
	}
	g := kmsg.NewOffsetFetchResponseGroup()
	g.ErrorCode = r.ErrorCode
	for _, t := range r.Topics {
		gt := kmsg.NewOffsetFetchResponseGroupTopic()
		gt.Topic = t.Topic
		for _, p := range t.Partitions {
			gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			gt.Partitions = append(gt.Partitions, gp)
		}
		g.Topics = append(g.Topics, gt)
	}
	return []kmsg.OffsetFetchResponseGroup{g}
}

// fetchCodes lists each group's code (v0-1: none, v2-7: the top-level
// one) and then its partitions' codes.
func fetchCodes(r *kmsg.OffsetFetchResponse) []int16 {
	var out []int16
	for _, g := range fetched(r) {
		out = append(out, g.ErrorCode)
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				out = append(out, p.ErrorCode)
			}
		}
	}
	return out
}

// wantOffsetsFetched checks the first group's answer: topic → partition →
// offset (-1: none).
func wantOffsetsFetched(want map[string]map[int32]int64) func(*testing.T, *scene, *kmsg.OffsetFetchResponse) {
	return func(t *testing.T, _ *scene, r *kmsg.OffsetFetchResponse) {
		t.Helper()
		got := map[string]map[int32]int64{}
		g := fetched(r)[0]
		for _, gt := range g.Topics {
			got[gt.Topic] = map[int32]int64{}
			for _, p := range gt.Partitions {
				got[gt.Topic][p.Partition] = p.Offset
				off, epoch, meta := committed(p.Partition)
				if p.Offset == -1 {
					epoch, meta = -1, ""
				}
				if r.Version < 5 {
					epoch = -1
				}
				if p.Metadata == nil || *p.Metadata != meta || p.LeaderEpoch != epoch || (p.Offset != -1 && p.Offset != off) {
					t.Fatalf("%s-%d fetched as %+v", gt.Topic, p.Partition, p)
				}
			}
		}
		if len(got) != len(want) {
			t.Fatalf("fetched %v, want %v", got, want)
		}
		for topic, ps := range want {
			for p, off := range ps {
				if o, ok := got[topic][p]; !ok || o != off {
					t.Fatalf("fetched %v, want %v", got, want)
				}
			}
		}
	}
}

func TestOffsetFetch(t *testing.T) {
	tOffsets := map[string]map[int32]int64{"t": {0: 10, 1: 11}}
	none := map[string]map[int32]int64{"t": {0: -1, 1: -1}}
	// asMember has the fetch name member 0 at its epoch (v9).
	asMember := func(mod func(*kmsg.OffsetFetchRequestGroup)) func(*testing.T, *scene, *kmsg.OffsetFetchRequest) {
		return func(_ *testing.T, s *scene, r *kmsg.OffsetFetchRequest) {
			r.Groups[0].MemberID, r.Groups[0].MemberEpoch = kmsg.StringPtr(s.members[0].id), s.members[0].gen
			if mod != nil {
				mod(&r.Groups[0])
			}
		}
	}
	runRows(t, tableOpts{groups: true, codes: codesOf(fetchCodes)}, []apiRow[*kmsg.OffsetFetchResponse]{
		{name: "committed", setup: withOffsets, req: fetchOf(nil), want: wantOffsetsFetched(tOffsets)},
		{
			name: "partly committed", setup: withOffsets,
			req:  fetchOf(func(_ *testing.T, _ *scene, r *kmsg.OffsetFetchRequest) { setFetchPartitions(r, 1, 5) }),
			want: wantOffsetsFetched(map[string]map[int32]int64{"t": {1: 11, 5: -1}}),
		},
		{name: "unknown group", req: fetchOf(nil), want: wantOffsetsFetched(none)},
		{name: "empty group id", req: fetchOf(func(_ *testing.T, _ *scene, r *kmsg.OffsetFetchRequest) { setFetchGroup(r, "") }), want: wantOffsetsFetched(none)},
		{
			name: "all topics", since: 2, setup: withOffsets,
			req:  func(_ *testing.T, s *scene) kmsg.Request { return offsetFetchReq([]string{s.group}, nil) },
			want: wantOffsetsFetched(map[string]map[int32]int64{"t": {0: 10, 1: 11}, "u": {0: 10}}),
		},
		{
			name: "several groups", since: 8, setup: withOffsets,
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return offsetFetchReq([]string{s.group, "other"}, map[string][]int32{"t": {0, 1}})
			},
			want: func(t *testing.T, s *scene, r *kmsg.OffsetFetchResponse) {
				wantOffsetsFetched(tOffsets)(t, s, r)
				if g := r.Groups[1]; g.Group != "other" || g.Topics[0].Partitions[0].Offset != -1 {
					t.Fatalf("second group fetched %+v", g)
				}
			},
		},
		{name: "consumer group member", since: 9, setup: steps(withOffsets, consumerGroup(1)), req: fetchOf(asMember(nil)), want: wantOffsetsFetched(tOffsets)},
		{
			name: "consumer group member, stale epoch", since: 9, setup: steps(withOffsets, consumerGroup(1)), codes: []int16{codeStaleMemberEpoch},
			req: fetchOf(asMember(func(g *kmsg.OffsetFetchRequestGroup) { g.MemberEpoch-- })),
		},
		{
			name: "unknown consumer group member", since: 9, setup: steps(withOffsets, consumerGroup(1)), codes: []int16{codeUnknownMember},
			req: fetchOf(asMember(func(g *kmsg.OffsetFetchRequestGroup) { g.MemberID = kmsg.StringPtr("nobody") })),
		},
		{name: "classic group member", since: 9, setup: steps(withOffsets, stable(1)), req: fetchOf(asMember(nil)), want: wantOffsetsFetched(tOffsets)},
		// v0-1 answer coordinator errors per partition.
		{name: "not coordinator", versions: []int16{0, 1}, scene: twoBrokers, setup: coordinatedElsewhere, req: fetchOf(nil), codes: []int16{0, codeNotCoordinator, codeNotCoordinator}},
		{name: "not coordinator", since: 2, scene: twoBrokers, setup: coordinatedElsewhere, req: fetchOf(nil), codes: []int16{codeNotCoordinator}},
		{name: "coordinator shut down", since: 2, setup: coordinatorClosed, req: fetchOf(nil), codes: []int16{codeCoordinatorNA}},
	})
}

// setFetchGroup names another group in every version's field.
func setFetchGroup(r *kmsg.OffsetFetchRequest, group string) {
	r.Group, r.Groups[0].Group = group, group
}

// setFetchPartitions asks for other partitions of t.
func setFetchPartitions(r *kmsg.OffsetFetchRequest, ps ...int32) {
	r.Topics[0].Partitions, r.Groups[0].Topics[0].Partitions = ps, ps
}

// offsetDeleteReq deletes the offsets of partitions of topic.
func offsetDeleteReq(topic string, partitions ...int32) func(*testing.T, *scene) kmsg.Request {
	return func(_ *testing.T, s *scene) kmsg.Request {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = s.group
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		for _, p := range partitions {
			rp := kmsg.NewOffsetDeleteRequestTopicPartition()
			rp.Partition = p
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return req
	}
}

func TestOffsetDelete(t *testing.T) {
	// memberOffsets has a member subscribing to t (protocol type kind)
	// join a group with offsets.
	memberOffsets := func(kind string) func(*testing.T, *scene) {
		return func(t *testing.T, s *scene) {
			withOffsets(t, s)
			req := joinRequest(s.group, "", nil)
			req.ProtocolType = kind
			s.members = []*groupMember{{id: joined(t, s.joinAsync(t, 9, req)).MemberID, gen: 1}}
		}
	}
	deleted := func(t *testing.T, s *scene, _ *kmsg.OffsetDeleteResponse) { wantCommitted(true, 1)(t, s) }
	runRows(t, tableOpts{groups: true, codes: errorCodes}, []apiRow[*kmsg.OffsetDeleteResponse]{
		{name: "delete", setup: withOffsets, req: offsetDeleteReq("t", 0), codes: []int16{0, 0}, want: deleted},
		{name: "uncommitted partition", setup: withOffsets, req: offsetDeleteReq("u", 1), codes: []int16{0, 0}},
		{name: "unknown topic", setup: withOffsets, req: offsetDeleteReq("nope", 0), codes: []int16{0, codeUnknownTopic}},
		{name: "unknown group", setup: withPartitions(2), req: offsetDeleteReq("t", 0), codes: []int16{codeGroupNotFound}},
		{
			name: "empty group id", setup: withOffsets, codes: []int16{codeInvalidGroupID},
			req: func(t *testing.T, s *scene) kmsg.Request {
				req := offsetDeleteReq("t", 0)(t, s).(*kmsg.OffsetDeleteRequest)
				req.Group = ""
				return req
			},
		},
		{
			name: "consumer group subscribed to the topic", setup: memberOffsets("consumer"),
			req:   offsetDeleteReq("t", 0),
			codes: []int16{0, codeSubscribedToTopic},
		},
		{name: "consumer group not subscribed to the topic", setup: memberOffsets("consumer"), req: offsetDeleteReq("u", 0), codes: []int16{0, 0}},
		{name: "active group of another protocol", setup: memberOffsets("connect"), req: offsetDeleteReq("u", 0), codes: []int16{codeNonEmptyGroup}},
		{name: "KIP-848 group subscribed to the topic", setup: steps(withOffsets, consumerGroup(1)), req: offsetDeleteReq("t", 0), codes: []int16{0, codeSubscribedToTopic}},
		{name: "not coordinator", scene: twoBrokers, setup: coordinatedElsewhere, req: offsetDeleteReq("t", 0), codes: []int16{codeNotCoordinator}},
		{name: "coordinator shut down", setup: coordinatorClosed, req: offsetDeleteReq("t", 0), codes: []int16{codeCoordinatorNA}},
	})
}
