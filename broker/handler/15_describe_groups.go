package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups: v0-5
//
// Behavior:
// * Each group is described by its coordinator; groups coordinated
//   elsewhere are NOT_COORDINATOR (or COORDINATOR_LOAD_IN_PROGRESS).
// * An unknown group is described as "Dead" with no error, as Kafka does
//   before v6.
// * The protocol, member metadata and assignments are shown only while
//   the group is Stable, as in Kafka.
// * Each group needs DESCRIBE (GROUP_AUTHORIZATION_FAILED); v3+
//   IncludeAuthorizedOperations answers the group operations (READ,
//   DESCRIBE, DELETE) the principal may do (KIP-430).
//
// Version notes:
// * v1: throttle; v3: authorized operations; v4: instance ids; v5: flexible

func handleDescribeGroups(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DescribeGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, name := range r.Groups {
		sg := kmsg.NewDescribeGroupsResponseGroup()
		sg.Group = name
		sg.AuthorizedOperations = notRequested
		if !env.allowedGroup(req, aclDescribe, name) {
			sg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, sg)
			continue
		}
		d, err := env.Groups.Describe(name)
		if err != nil {
			sg.ErrorCode = groupErrorCode(err)
			resp.Groups = append(resp.Groups, sg)
			continue
		}
		sg.State, sg.ProtocolType = d.State, d.ProtocolType
		if d.State == "Stable" {
			sg.Protocol = d.Protocol
		}
		sg.AuthorizedOperations = env.authorizedOperationsIf(r.IncludeAuthorizedOperations, req, resGroup, name)
		for _, m := range d.Members {
			sm := kmsg.NewDescribeGroupsResponseGroupMember()
			sm.MemberID, sm.InstanceID, sm.ClientID, sm.ClientHost = m.MemberID, m.InstanceID, m.ClientID, m.ClientHost
			sm.ProtocolMetadata, sm.MemberAssignment = orEmpty(m.Metadata), orEmpty(m.Assignment)
			sg.Members = append(sg.Members, sm)
		}
		resp.Groups = append(resp.Groups, sg)
	}
	return Result{Resp: resp}, nil
}

// orEmpty turns a nil byte string into an empty one, for non-nullable
// protocol fields.
func orEmpty(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
