package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
)

// OffsetDelete: v0
//
// Behavior:
// * Deletes committed offsets of a group (tombstones in
//   __consumer_offsets). An Empty group left without offsets is removed.
// * In an active consumer group, partitions of topics its members
//   subscribe to are GROUP_SUBSCRIBED_TO_TOPIC; an active group of another
//   protocol type is NON_EMPTY_GROUP; an unknown group GROUP_ID_NOT_FOUND;
//   an empty group id INVALID_GROUP_ID, as in Kafka.
// * Partitions the metadata does not know are UNKNOWN_TOPIC_OR_PARTITION.
// * The group needs DELETE (top-level GROUP_AUTHORIZATION_FAILED), each
//   topic READ (TOPIC_AUTHORIZATION_FAILED), as in Kafka.

func handleOffsetDelete(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.OffsetDeleteRequest)
	resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if !env.allowedGroup(req, aclDelete, r.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return Result{Resp: resp}, nil
	}
	if r.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return Result{Resp: resp}, nil
	}
	type slot struct{ t, p int }
	var slots []slot
	var tps []group.TopicPartition
	for ti, rt := range r.Topics {
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		for pi, rp := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition = rp.Partition
			if !env.allowedTopic(req, aclRead, rt.Topic) {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else if env.partitionExists(rt.Topic, rp.Partition) {
				tps = append(tps, group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
				slots = append(slots, slot{ti, pi})
			} else {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	errs, err := env.Groups.DeleteOffsets(r.Group, tps)
	if err != nil {
		resp.ErrorCode = groupErrorCode(err)
		resp.Topics = nil
		return Result{Resp: resp}, nil
	}
	for i, s := range slots {
		resp.Topics[s.t].Partitions[s.p].ErrorCode = groupErrorCode(errs[i])
	}
	return Result{Resp: resp}, nil
}
