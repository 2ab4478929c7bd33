package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListGroups: v0-5
//
// Behavior:
// * Lists the groups this broker coordinates (clients ask every broker).
// * v4+ StatesFilter and v5+ TypesFilter match case-insensitively; a group
//   is of type "classic" or "consumer" (KIP-848), and a consumer group's
//   state is Empty, Assigning, Reconciling or Stable.
// * While a coordinated partition is still loading the listing is partial
//   and the error is COORDINATOR_LOAD_IN_PROGRESS.
// * With DESCRIBE on the cluster every group is listed, else only those
//   the principal may DESCRIBE, as in Kafka.
//
// Version notes:
// * v1: throttle; v3: flexible; v4: states (KIP-518); v5: types (KIP-848)

func handleListGroups(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.ListGroupsRequest)
	resp := r.ResponseKind().(*kmsg.ListGroupsResponse)
	groups, err := env.Groups.List(r.StatesFilter, r.TypesFilter)
	resp.ErrorCode = groupErrorCode(err)
	all := env.allowedCluster(req, aclDescribe)
	for _, g := range groups {
		if !all && !env.allowedGroup(req, aclDescribe, g.Group) {
			continue
		}
		sg := kmsg.NewListGroupsResponseGroup()
		sg.Group, sg.ProtocolType, sg.GroupState, sg.GroupType = g.Group, g.ProtocolType, g.State, g.Type
		resp.Groups = append(resp.Groups, sg)
	}
	return Result{Resp: resp}, nil
}
