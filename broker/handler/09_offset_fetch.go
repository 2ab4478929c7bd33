package handler

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
)

// OffsetFetch: v0-9
//
// Behavior:
// * Answers the committed offset, leader epoch and metadata of each asked
//   partition; partitions without a commit (and unknown groups) get offset
//   -1, leader epoch -1 and metadata "".
// * Topics null (v2+) asks for every committed offset of the group.
// * Coordinator errors (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, …)
//   are per partition in v0-v1, top-level in v2-v7, per group in v8+.
// * RequireStable (v7+): a partition an open transaction commits an
//   offset of (TxnOffsetCommit without its marker yet) is
//   UNSTABLE_OFFSET_COMMIT with offset -1, as Kafka answers; the client
//   retries. Without it such a partition shows its last committed offset.
//
// * The group needs DESCRIBE (GROUP_AUTHORIZATION_FAILED: per group in
//   v8+, top-level in v2-v7, per partition before); a topic without
//   DESCRIBE is TOPIC_AUTHORIZATION_FAILED when asked for, and left out
//   of a listing of all the group's offsets, as in Kafka.
//
// Version notes:
// * v2: all topics, top-level error; v3: throttle; v5: leader epoch
// * v6: flexible; v7: require stable; v8: batched groups (KIP-709)
// * v9: member id and epoch (KIP-848): for a KIP-848 group an epoch ≥ 0
//   is checked (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH); classic groups and
//   epoch -1 (admin) are not checked

// fetchTopic is one topic of a request: nil partitions with nil topics
// means "everything".
type fetchTopic struct {
	topic      string
	partitions []int32
}

func handleOffsetFetch(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.OffsetFetchRequest)
	resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
	if r.Version >= 8 {
		for _, rg := range r.Groups {
			var topics []fetchTopic
			if rg.Topics != nil {
				topics = []fetchTopic{}
				for _, t := range rg.Topics {
					topics = append(topics, fetchTopic{t.Topic, t.Partitions})
				}
			}
			member := ""
			if rg.MemberID != nil {
				member = *rg.MemberID
			}
			sg := kmsg.NewOffsetFetchResponseGroup()
			sg.Group = rg.Group
			if !env.allowedGroup(req, aclDescribe, rg.Group) {
				sg.ErrorCode = kerr.GroupAuthorizationFailed.Code
				resp.Groups = append(resp.Groups, sg)
				continue
			}
			got, err := env.fetchOffsets(rg.Group, member, rg.MemberEpoch, topics, r.RequireStable)
			sg.ErrorCode = groupErrorCode(err)
			if err == nil {
				got = env.describableOffsets(req, got, topics == nil)
				for _, t := range got {
					st := kmsg.NewOffsetFetchResponseGroupTopic()
					st.Topic = t.Topic
					for _, p := range t.Partitions {
						sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
						sp.Partition, sp.Offset, sp.LeaderEpoch, sp.Metadata = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata
						sp.ErrorCode = p.ErrorCode
						st.Partitions = append(st.Partitions, sp)
					}
					sg.Topics = append(sg.Topics, st)
				}
			}
			resp.Groups = append(resp.Groups, sg)
		}
		return Result{Resp: resp}, nil
	}
	var topics []fetchTopic
	if r.Topics != nil || r.Version < 2 {
		topics = []fetchTopic{}
		for _, t := range r.Topics {
			topics = append(topics, fetchTopic{t.Topic, t.Partitions})
		}
	}
	var got []kmsg.OffsetFetchResponseGroupTopic
	code := kerr.GroupAuthorizationFailed.Code
	if env.allowedGroup(req, aclDescribe, r.Group) {
		var err error
		got, err = env.fetchOffsets(r.Group, "", -1, topics, r.Version >= 7 && r.RequireStable)
		code = groupErrorCode(err)
	}
	if code != 0 && r.Version >= 2 {
		resp.ErrorCode = code
		return Result{Resp: resp}, nil
	}
	if code != 0 { // v0-v1: the error goes to every asked partition
		got = unknownOffsets(topics)
	} else {
		got = env.describableOffsets(req, got, topics == nil)
	}
	for _, t := range got {
		st := kmsg.NewOffsetFetchResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewOffsetFetchResponseTopicPartition()
			sp.Partition, sp.Offset, sp.LeaderEpoch, sp.Metadata = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata
			sp.ErrorCode = p.ErrorCode
			if code != 0 {
				sp.ErrorCode = code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return Result{Resp: resp}, nil
}

// describableOffsets keeps of a group's offsets those of topics the
// principal may DESCRIBE: of all the group's offsets (all) the others are
// left out, of those asked for they are TOPIC_AUTHORIZATION_FAILED.
func (e *Env) describableOffsets(req *Request, got []kmsg.OffsetFetchResponseGroupTopic, all bool) []kmsg.OffsetFetchResponseGroupTopic {
	if e.Authorizer == nil {
		return got
	}
	out := got[:0]
	for _, t := range got {
		if e.allowedTopic(req, aclDescribe, t.Topic) {
			out = append(out, t)
			continue
		}
		if all {
			continue
		}
		for i := range t.Partitions {
			p := &t.Partitions[i]
			p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, kmsg.StringPtr(""), kerr.TopicAuthorizationFailed.Code
		}
		out = append(out, t)
	}
	return out
}

// fetchOffsets reads a group's offsets; topics nil asks for all of them.
// With requireStable, partitions with offsets of an open transaction are
// UNSTABLE_OFFSET_COMMIT.
func (e *Env) fetchOffsets(groupID, member string, epoch int32, topics []fetchTopic, requireStable bool) ([]kmsg.OffsetFetchResponseGroupTopic, error) {
	var tps []group.TopicPartition
	if topics != nil {
		tps = []group.TopicPartition{}
		for _, t := range topics {
			for _, p := range t.partitions {
				tps = append(tps, group.TopicPartition{Topic: t.topic, Partition: p})
			}
		}
	}
	offsets, unstable, err := e.Groups.FetchStableOffsetsAs(groupID, member, epoch, tps, requireStable)
	if err != nil {
		return nil, err
	}
	if topics == nil {
		byTopic := map[string][]int32{}
		for tp := range offsets {
			byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
		}
		topics = make([]fetchTopic, 0, len(byTopic))
		for t, ps := range byTopic {
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			topics = append(topics, fetchTopic{t, ps})
		}
		sort.Slice(topics, func(i, j int) bool { return topics[i].topic < topics[j].topic })
	}
	out := unknownOffsets(topics)
	for i := range out {
		for j := range out[i].Partitions {
			p := &out[i].Partitions[j]
			tp := group.TopicPartition{Topic: out[i].Topic, Partition: p.Partition}
			if unstable[tp] {
				p.ErrorCode = kerr.UnstableOffsetCommit.Code
			} else if o, ok := offsets[tp]; ok {
				p.Offset, p.LeaderEpoch, p.Metadata = o.Offset, o.LeaderEpoch, kmsg.StringPtr(o.Metadata)
			}
		}
	}
	return out, nil
}

// unknownOffsets answers every asked partition with "no commit".
func unknownOffsets(topics []fetchTopic) []kmsg.OffsetFetchResponseGroupTopic {
	out := make([]kmsg.OffsetFetchResponseGroupTopic, 0, len(topics))
	for _, t := range topics {
		st := kmsg.NewOffsetFetchResponseGroupTopic()
		st.Topic = t.topic
		for _, p := range t.partitions {
			sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
			sp.Partition, sp.Offset, sp.LeaderEpoch, sp.Metadata = p, -1, -1, kmsg.StringPtr("")
			st.Partitions = append(st.Partitions, sp)
		}
		out = append(out, st)
	}
	return out
}
