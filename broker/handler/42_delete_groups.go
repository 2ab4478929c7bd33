package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups: v0-2
//
// Behavior:
// * An Empty group is deleted with all its offsets: tombstones for each
//   offset and for the group go to __consumer_offsets.
// * A group with members is NON_EMPTY_GROUP; an unknown one
//   GROUP_ID_NOT_FOUND; one coordinated elsewhere NOT_COORDINATOR.
// * Each group needs DELETE (GROUP_AUTHORIZATION_FAILED).
//
// Version notes:
// * v1: no change; v2: flexible

func handleDeleteGroups(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DeleteGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, name := range r.Groups {
		sg := kmsg.NewDeleteGroupsResponseGroup()
		sg.Group = name
		if !env.allowedGroup(req, aclDelete, name) {
			sg.ErrorCode = kerr.GroupAuthorizationFailed.Code
		} else {
			sg.ErrorCode = groupErrorCode(env.Groups.DeleteGroup(name))
		}
		resp.Groups = append(resp.Groups, sg)
	}
	return Result{Resp: resp}, nil
}
