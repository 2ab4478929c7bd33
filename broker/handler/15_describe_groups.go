package handler

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupOperations is the AuthorizedOperations bit field of a group without
// ACLs: READ (3), DELETE (6) and DESCRIBE (8).
const groupOperations = 1<<3 | 1<<6 | 1<<8

// DescribeGroups: v0-5
//
// Behavior:
// * Each group is described by its coordinator; groups coordinated
//   elsewhere are NOT_COORDINATOR (or COORDINATOR_LOAD_IN_PROGRESS).
// * An unknown group is described as "Dead" with no error, as Kafka does
//   before v6.
// * The protocol, member metadata and assignments are shown only while
//   the group is Stable, as in Kafka.
// * v3+ IncludeAuthorizedOperations: every group operation is allowed (no
//   ACLs yet).
//
// Version notes:
// * v1: throttle; v3: authorized operations; v4: instance ids; v5: flexible

func handleDescribeGroups(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DescribeGroupsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, name := range r.Groups {
		sg := kmsg.NewDescribeGroupsResponseGroup()
		sg.Group = name
		sg.AuthorizedOperations = math.MinInt32
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
		if r.IncludeAuthorizedOperations {
			sg.AuthorizedOperations = groupOperations
		}
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
