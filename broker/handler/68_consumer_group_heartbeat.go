package handler

import (
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
)

// ConsumerGroupHeartbeat: v0-1
//
// Behavior:
// * The KIP-848 consumer protocol: the coordinator computes each member's
//   target assignment with a server-side assignor ("uniform", the default,
//   or "range") and hands it out incrementally: partitions are revoked
//   from their owner before anybody else gets them, and no member stops
//   consuming the partitions it keeps.
// * Epoch 0 joins (the owned partitions must be an empty list; the
//   subscription and rebalance timeout must be set), -1 leaves, -2 leaves
//   temporarily (a static member about to restart keeps its partitions
//   until its session expires or its instance id rejoins).
// * A member one epoch behind is accepted while it owns a subset of its
//   assignment; otherwise FENCED_MEMBER_EPOCH. Unknown members are
//   UNKNOWN_MEMBER_ID; an instance id still held by an active member
//   UNRELEASED_INSTANCE_ID; a replaced one FENCED_INSTANCE_ID; a missing
//   or misused field INVALID_REQUEST; an unknown assignor
//   UNSUPPORTED_ASSIGNOR.
// * Members that do not revoke within their rebalance timeout, or do not
//   heartbeat within group.consumer.session.timeout.ms (45 s), are
//   removed; the heartbeat interval answered is
//   group.consumer.heartbeat.interval.ms (5 s).
// * A topic regex (v1) must match a whole topic name (RE2 syntax, as
//   Kafka's RE2/J) and is matched against every topic, internal ones such
//   as __consumer_offsets included, as Kafka resolves it.
// * A classic group with members is not a consumer group
//   (GROUP_ID_NOT_FOUND); an empty one becomes one.
// * Group epoch, members, target and current assignments are written to
//   __consumer_offsets (Kafka's key versions 3, 5-8) once replicated, so
//   members survive a coordinator restart or move without rejoining.
// * The group needs READ (GROUP_AUTHORIZATION_FAILED), each subscribed
//   topic named DESCRIBE (TOPIC_AUTHORIZATION_FAILED).
//
// Version notes:
// * v0: the coordinator names joining members
// * v1: members bring their own member id (KIP-1082); topic regex

func handleConsumerGroupHeartbeat(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if code := env.heartbeatDenied(req, r); code != 0 {
		resp.ErrorCode = code
		return Result{Resp: resp}, nil
	}
	hr := group.ConsumerHeartbeatRequest{
		Group:            r.Group,
		MemberID:         r.MemberID,
		MemberEpoch:      r.MemberEpoch,
		InstanceID:       r.InstanceID,
		RackID:           r.RackID,
		ClientID:         req.Header.ClientID,
		RebalanceTimeout: millis(r.RebalanceTimeoutMillis),
		SubscribedTopics: r.SubscribedTopicNames,
		SubscribedRegex:  r.SubscribedTopicRegex,
		ServerAssignor:   r.ServerAssignor,
		GenerateMemberID: r.Version == 0,
	}
	if r.RebalanceTimeoutMillis < 0 {
		hr.RebalanceTimeout = -1
	}
	if r.Topics != nil {
		hr.Owned = group.Assignment{}
		for _, t := range r.Topics {
			hr.Owned[t.TopicID] = append(hr.Owned[t.TopicID], t.Partitions...)
		}
		normalizeAssignment(hr.Owned)
	}
	res := env.Groups.ConsumerHeartbeat(hr)
	resp.HeartbeatIntervalMillis = int32(res.HeartbeatInterval.Milliseconds())
	resp.MemberEpoch = res.MemberEpoch
	if res.Err != nil {
		resp.ErrorCode = groupErrorCode(res.Err)
		if errors.Is(res.Err, group.ErrInvalidRequest) || errors.Is(res.Err, group.ErrUnsupportedAssignor) ||
			errors.Is(res.Err, group.ErrUnreleasedInstanceID) || errors.Is(res.Err, group.ErrFencedMemberEpoch) {
			resp.ErrorMessage = kmsg.StringPtr(res.Err.Error())
		}
		return Result{Resp: resp}, nil
	}
	resp.MemberID = kmsg.StringPtr(res.MemberID)
	if res.Assignment != nil {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for id, ps := range res.Assignment {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID, t.Partitions = id, ps
			a.Topics = append(a.Topics, t)
		}
		resp.Assignment = &a
	}
	return Result{Resp: resp}, nil
}

// heartbeatDenied is the code of a ConsumerGroupHeartbeat its principal
// may not send: GROUP_AUTHORIZATION_FAILED without READ on the group,
// TOPIC_AUTHORIZATION_FAILED when a subscribed topic named may not be
// described (a member may not learn of topics it could not describe, as
// Kafka answers); 0 when it may.
func (e *Env) heartbeatDenied(req *Request, r *kmsg.ConsumerGroupHeartbeatRequest) int16 {
	if !e.allowedGroup(req, aclRead, r.Group) {
		return kerr.GroupAuthorizationFailed.Code
	}
	for _, t := range r.SubscribedTopicNames {
		if !e.allowedTopic(req, aclDescribe, t) {
			return kerr.TopicAuthorizationFailed.Code
		}
	}
	return 0
}

// normalizeAssignment sorts each topic's partitions and drops duplicates.
func normalizeAssignment(a group.Assignment) {
	for id, ps := range a {
		sorted := make([]int32, 0, len(ps))
		seen := map[int32]bool{}
		for _, p := range ps {
			if !seen[p] {
				seen[p] = true
				sorted = append(sorted, p)
			}
		}
		slices.Sort(sorted)
		a[id] = sorted
	}
}
