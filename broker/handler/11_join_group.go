package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
)

// JoinGroup: v0-9
//
// Behavior:
// * The classic group protocol of broker/group: the broker relays the
//   members' protocol metadata to the leader and stays out of the
//   assignor's way (eager and cooperative assignors alike).
// * The request waits (Async) until the join phase of the rebalance ends:
//   every member rejoined, or the largest rebalance timeout passed; a group
//   leaving Empty first waits group.initial.rebalance.delay.ms.
// * A session timeout outside group.min/max.session.timeout.ms is
//   INVALID_SESSION_TIMEOUT; a full group GROUP_MAX_SIZE_REACHED; an
//   empty group id INVALID_GROUP_ID; a protocol type or protocol list the
//   group cannot share INCONSISTENT_GROUP_PROTOCOL; an unknown member id
//   UNKNOWN_MEMBER_ID; a static instance id held by a newer member
//   FENCED_INSTANCE_ID.
// * The group needs READ (GROUP_AUTHORIZATION_FAILED).
//
// Version notes:
// * v0: the rebalance timeout is the session timeout; v1: rebalance timeout
// * v4: a dynamic member without a member id gets MEMBER_ID_REQUIRED and
//   the id to rejoin with (KIP-394)
// * v5: group.instance.id (KIP-345): a restarted static member with
//   unchanged metadata rejoins a stable group without a rebalance
// * v6: flexible; v7: protocol type in the response; v8: reason
// * v9: SkipAssignment for a static leader rejoining a stable group
//   (KIP-814); older leaders are not told they lead in that case

func handleJoinGroup(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.JoinGroupRequest)
	resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
	if !env.allowedGroup(req, aclRead, r.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return Result{Resp: resp}, nil
	}
	jr := group.JoinRequest{
		Group:                  r.Group,
		MemberID:               r.MemberID,
		InstanceID:             r.InstanceID,
		ClientID:               req.Header.ClientID,
		ProtocolType:           r.ProtocolType,
		SessionTimeout:         millis(r.SessionTimeoutMillis),
		RebalanceTimeout:       millis(r.RebalanceTimeoutMillis),
		RequireKnownMemberID:   r.Version >= 4,
		SupportsSkipAssignment: r.Version >= 9,
	}
	if r.Version == 0 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	if r.Reason != nil {
		jr.Reason = *r.Reason
	}
	for _, p := range r.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	res := env.Groups.Join(ctx, jr)
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	resp.ErrorCode = groupErrorCode(res.Err)
	resp.MemberID = res.MemberID
	resp.Generation = res.Generation
	if res.Err != nil {
		return Result{Resp: resp}, nil
	}
	resp.ProtocolType = kmsg.StringPtr(res.ProtocolType)
	resp.Protocol = kmsg.StringPtr(res.Protocol)
	resp.LeaderID = res.LeaderID
	resp.SkipAssignment = res.SkipAssignment
	for _, m := range res.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.MemberID, m.InstanceID, m.Metadata
		resp.Members = append(resp.Members, rm)
	}
	return Result{Resp: resp}, nil
}
