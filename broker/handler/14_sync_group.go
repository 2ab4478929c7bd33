package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
)

// SyncGroup: v0-5
//
// Behavior:
// * The leader sends every member's assignment; the coordinator writes it
//   with the generation to __consumer_offsets and then answers every
//   member waiting here (Async) with its own. Members the leader left out
//   get an empty assignment.
// * Followers that sync before the leader wait for it; a stable group
//   answers at once with the member's current assignment.
// * Errors: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS
//   (the group is preparing a rebalance), FENCED_INSTANCE_ID,
//   INCONSISTENT_GROUP_PROTOCOL (v5 protocol type/name differ), and
//   COORDINATOR_NOT_AVAILABLE when the assignment could not be written.
// * The group needs READ (GROUP_AUTHORIZATION_FAILED).
//
// Version notes:
// * v1: throttle; v3: instance id; v4: flexible
// * v5: protocol type and name in request and response

func handleSyncGroup(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.SyncGroupRequest)
	resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
	if !env.allowedGroup(req, aclRead, r.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		resp.MemberAssignment = []byte{}
		return Result{Resp: resp}, nil
	}
	sr := group.SyncRequest{
		Group:        r.Group,
		MemberID:     r.MemberID,
		InstanceID:   r.InstanceID,
		Generation:   r.Generation,
		ProtocolType: r.ProtocolType,
		Protocol:     r.Protocol,
	}
	if len(r.GroupAssignment) > 0 {
		sr.Assignments = make(map[string][]byte, len(r.GroupAssignment))
		for _, a := range r.GroupAssignment {
			sr.Assignments[a.MemberID] = a.MemberAssignment
		}
	}
	res := env.Groups.Sync(ctx, sr)
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	resp.ErrorCode = groupErrorCode(res.Err)
	resp.MemberAssignment = []byte{}
	if res.Err == nil {
		resp.ProtocolType = kmsg.StringPtr(res.ProtocolType)
		resp.Protocol = kmsg.StringPtr(res.Protocol)
		if res.Assignment != nil {
			resp.MemberAssignment = res.Assignment
		}
	}
	return Result{Resp: resp}, nil
}
