package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups: v0-2
//
// Behavior:
// * An Empty group is deleted with all its offsets: tombstones for each
//   offset and for the group go to __consumer_offsets.
// * A group with members is NON_EMPTY_GROUP; an unknown one
//   GROUP_ID_NOT_FOUND; one coordinated elsewhere NOT_COORDINATOR.
//
// Version notes:
// * v1: no change; v2: flexible

func handleDeleteGroups(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DeleteGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, name := range r.Groups {
		sg := kmsg.NewDeleteGroupsResponseGroup()
		sg.Group = name
		sg.ErrorCode = groupErrorCode(env.Groups.DeleteGroup(name))
		resp.Groups = append(resp.Groups, sg)
	}
	return Result{Resp: resp}, nil
}
