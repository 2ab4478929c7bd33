package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
)

// LeaveGroup: v0-5
//
// Behavior:
// * Each leaving member is removed and the group rebalances without it.
// * v3+ batches members; a member named by instance id only (empty member
//   id) is removed administratively, and its member id is answered.
// * A member or group the coordinator does not know is UNKNOWN_MEMBER_ID
//   (per member in v3+); a replaced static member FENCED_INSTANCE_ID.
// * The group needs READ (GROUP_AUTHORIZATION_FAILED).
//
// Version notes:
// * v1: throttle; v3: batched members with instance ids (KIP-345)
// * v4: flexible; v5: reason

func handleLeaveGroup(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.LeaveGroupRequest)
	resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
	if !env.allowedGroup(req, aclRead, r.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return Result{Resp: resp}, nil
	}
	var members []group.LeavingMember
	if r.Version < 3 {
		members = []group.LeavingMember{{MemberID: r.MemberID}}
	} else {
		for _, m := range r.Members {
			members = append(members, group.LeavingMember{MemberID: m.MemberID, InstanceID: m.InstanceID})
		}
	}
	errs, err := env.Groups.Leave(r.Group, members)
	if err != nil {
		resp.ErrorCode = groupErrorCode(err)
		return Result{Resp: resp}, nil
	}
	if r.Version < 3 {
		resp.ErrorCode = groupErrorCode(errs[0])
		return Result{Resp: resp}, nil
	}
	for i, m := range members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, groupErrorCode(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return Result{Resp: resp}, nil
}
