package handler

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
)

// ConsumerGroupDescribe: v0-1
//
// Behavior:
// * Describes KIP-848 groups: state (Empty, Assigning, Reconciling,
//   Stable), group and assignment epochs, the assignor, and every member
//   with its epoch, subscription, current and target assignment.
// * A missing or classic group is GROUP_ID_NOT_FOUND; a group coordinated
//   elsewhere NOT_COORDINATOR; an empty group id INVALID_GROUP_ID, as in
//   Kafka.
// * Each group needs DESCRIBE (GROUP_AUTHORIZATION_FAILED);
//   IncludeAuthorizedOperations answers the group operations the
//   principal may do (KIP-430).
//
// Version notes:
// * v1: member type (1: consumer protocol)

func handleConsumerGroupDescribe(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := r.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, name := range r.Groups {
		sg := kmsg.NewConsumerGroupDescribeResponseGroup()
		sg.Group = name
		sg.AuthorizedOperations = notRequested
		if name == "" {
			sg.ErrorCode = kerr.InvalidGroupID.Code
			resp.Groups = append(resp.Groups, sg)
			continue
		}
		if !env.allowedGroup(req, aclDescribe, name) {
			sg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, sg)
			continue
		}
		d, err := env.Groups.DescribeConsumerGroup(name)
		if err != nil {
			sg.ErrorCode, sg.ErrorMessage = groupErrorCode(err), kmsg.StringPtr(err.Error())
			resp.Groups = append(resp.Groups, sg)
			continue
		}
		sg.State, sg.Epoch, sg.AssignmentEpoch, sg.AssignorName = d.State, d.Epoch, d.AssignmentEpoch, d.Assignor
		sg.AuthorizedOperations = env.authorizedOperationsIf(r.IncludeAuthorizedOperations, req, resGroup, name)
		for _, m := range d.Members {
			sm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			sm.MemberID, sm.InstanceID, sm.RackID, sm.MemberEpoch = m.MemberID, m.InstanceID, m.RackID, m.MemberEpoch
			sm.ClientID, sm.ClientHost = m.ClientID, m.ClientHost
			sm.SubscribedTopics, sm.SubscribedTopicRegex = slices.Clone(m.SubscribedTopics), m.SubscribedRegex
			if sm.SubscribedTopics == nil {
				sm.SubscribedTopics = []string{}
			}
			sm.Assignment, sm.TargetAssignment = describedAssignment(m.Assignment), describedAssignment(m.Target)
			sm.MemberType = 1
			sg.Members = append(sg.Members, sm)
		}
		resp.Groups = append(resp.Groups, sg)
	}
	return Result{Resp: resp}, nil
}

func describedAssignment(ts []group.TopicAssignment) kmsg.Assignment {
	a := kmsg.NewAssignment()
	for _, t := range ts {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = t.ID, t.Name, t.Partitions
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}
