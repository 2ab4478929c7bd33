package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
)

// Heartbeat: v0-4
//
// Behavior:
// * Keeps the member's session (session.timeout.ms) alive.
// * REBALANCE_IN_PROGRESS while the group prepares a rebalance (the member
//   must rejoin); ILLEGAL_GENERATION for an old generation;
//   UNKNOWN_MEMBER_ID for a member (or group) the coordinator does not
//   know; FENCED_INSTANCE_ID for a replaced static member.
// * The group needs READ (GROUP_AUTHORIZATION_FAILED).
//
// Version notes:
// * v1: throttle; v3: instance id; v4: flexible

func handleHeartbeat(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.HeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
	if !env.allowedGroup(req, aclRead, r.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return Result{Resp: resp}, nil
	}
	err := env.Groups.Heartbeat(group.HeartbeatRequest{
		Group:      r.Group,
		MemberID:   r.MemberID,
		InstanceID: r.InstanceID,
		Generation: r.Generation,
	})
	resp.ErrorCode = groupErrorCode(err)
	return Result{Resp: resp}, nil
}
