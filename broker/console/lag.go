package console

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/handler"
)

// lagTTL is how long the topic list reuses a lag index before it builds
// the next one.
const lagTTL = 2 * time.Second

// groupLag is one group's total lag on one topic.
type groupLag struct {
	Group string
	Lag   int64
}

// lagIndex is the consumer lag of every topic by group: the sum, over
// the partitions a group has committed an offset of, of the high
// watermark minus the committed offset. It is built from the committed
// offsets every coordinator knows (this broker's group coordinator,
// and the others' through ListGroups and OffsetFetch over the peer
// client) and the high watermarks of those partitions (the local
// replica's when this broker leads, else the leader's ListOffsets).
// It is kept for lagTTL, so a page of the topic list costs a map
// lookup per topic rather than a walk of every group's offsets.
type lagIndex struct {
	ttlCache[map[string][]groupLag]
}

// lagsByTopic is the current lag index, built again when older than lagTTL.
func (s *Server) lagsByTopic(env *handler.Env) map[string][]groupLag {
	return s.lags.get(lagTTL, func() map[string][]groupLag {
		ctx, cancel := s.gatherCtx() // not the request's: the index outlives it
		defer cancel()
		return buildLagIndex(ctx, env)
	})
}

// buildLagIndex gathers the committed offsets of all coordinators and
// the high watermarks of their partitions.
func buildLagIndex(ctx context.Context, env *handler.Env) map[string][]groupLag {
	var committed []group.Committed
	if env.Groups != nil {
		_, committed = env.Groups.AllCommitted()
	}
	be := &backend{env: env, asBroker: true}
	if env.Peers != nil {
		for _, b := range env.Cache.Brokers() {
			if b.ID != env.Self.ID {
				committed = append(committed, peerCommitted(ctx, be, b.ID)...)
			}
		}
	}
	hw := highWatermarks(ctx, be, committed)
	sums := map[string]map[string]int64{}
	for _, c := range committed {
		end, ok := hw[c.TopicPartition]
		if !ok || c.Offset < 0 {
			continue
		}
		byGroup := sums[c.Topic]
		if byGroup == nil {
			byGroup = map[string]int64{}
			sums[c.Topic] = byGroup
		}
		byGroup[c.Group] += max(0, end-c.Offset)
	}
	out := make(map[string][]groupLag, len(sums))
	for topic, byGroup := range sums {
		for g, lag := range byGroup {
			out[topic] = append(out[topic], groupLag{Group: g, Lag: lag})
		}
	}
	return out
}

// peerCommitted is the committed offsets of the groups broker id
// coordinates; nothing when it does not answer.
func peerCommitted(ctx context.Context, be *backend, id int32) []group.Committed {
	res, err := be.on(ctx, id, kmsg.NewPtrListGroupsRequest())
	if err != nil {
		return nil
	}
	lr := res.(*kmsg.ListGroupsResponse)
	if kerr.ErrorForCode(lr.ErrorCode) != nil || len(lr.Groups) == 0 {
		return nil
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	for _, g := range lr.Groups {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberEpoch = g.Group, -1
		of.Groups = append(of.Groups, rg)
	}
	res, err = be.on(ctx, id, of) // v8+: many groups in one request
	if err != nil {
		return nil
	}
	var out []group.Committed
	for _, g := range res.(*kmsg.OffsetFetchResponse).Groups {
		if kerr.ErrorForCode(g.ErrorCode) != nil {
			continue
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if kerr.ErrorForCode(p.ErrorCode) == nil {
					out = append(out, group.Committed{Group: g.Group, TopicPartition: group.TopicPartition{Topic: t.Topic, Partition: p.Partition}, Offset: p.Offset})
				}
			}
		}
	}
	return out
}

// highWatermarks is the high watermark of each partition committed
// names: this broker's replica's when it leads (or when the leader does
// not answer), else the leader's ListOffsets.
func highWatermarks(ctx context.Context, be *backend, committed []group.Committed) map[group.TopicPartition]int64 {
	env := be.env
	out := map[group.TopicPartition]int64{}
	byLeader := map[int32]map[string][]int32{}
	for _, c := range committed {
		tp := c.TopicPartition
		if _, ok := out[tp]; ok {
			continue
		}
		st, ok := env.Cache.Partition(tp.Topic, tp.Partition)
		if !ok {
			continue
		}
		if env.Partitions != nil {
			if p, ok := env.Partitions.Get(tp.Topic, tp.Partition); ok {
				out[tp] = p.HighWatermark() // replaced by the leader's below
			}
		}
		if st.Leader < 0 || st.Leader == env.Self.ID || env.Peers == nil {
			continue
		}
		if byLeader[st.Leader] == nil {
			byLeader[st.Leader] = map[string][]int32{}
		}
		if !slices.Contains(byLeader[st.Leader][tp.Topic], tp.Partition) {
			byLeader[st.Leader][tp.Topic] = append(byLeader[st.Leader][tp.Topic], tp.Partition)
		}
	}
	for leader, topics := range byLeader {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		for topic, parts := range topics {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			for _, p := range parts {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		res, err := be.on(ctx, leader, req)
		if err != nil {
			continue
		}
		for _, t := range res.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				if kerr.ErrorForCode(p.ErrorCode) == nil {
					out[group.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.Offset
				}
			}
		}
	}
	return out
}
