package handler

import (
	"context"
	"fmt"

	"github.com/strata-broker/strata/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreatePartitions: v0-3
//
// Behavior:
// * Count is the new total; it must exceed the current count
//   (INVALID_PARTITIONS otherwise). More than 10,000 new partitions at
//   once is POLICY_VIOLATION, as in CreateTopics.
// * Internal topics may grow too, as in Kafka (moving groups to other
//   coordinators: their committed offsets stay behind).
// * New partitions keep the topic's replication factor, placed round-robin,
//   or as the manual assignment says (one list of that many distinct live
//   brokers per new partition, INVALID_REPLICA_ASSIGNMENT otherwise).
// * A topic named twice in one request is INVALID_REQUEST for both.
// * New replicas that would take a broker past the partition limit it
//   registered (max.broker.partitions, capped by its open files) are
//   POLICY_VIOLATION with a message naming the broker and the limit.
// * Each topic needs ALTER (TOPIC_AUTHORIZATION_FAILED).
// * ValidateOnly checks without creating.

func handleCreatePartitions(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.CreatePartitionsRequest)
	resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := map[string]int{}
	for _, rt := range r.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range r.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		if seen[rt.Topic] > 1 {
			st.ErrorCode, st.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("topic named more than once in one request")
		} else if !env.allowedTopic(req, aclAlter, rt.Topic) {
			st.ErrorCode, st.ErrorMessage = kerr.TopicAuthorizationFailed.Code, kmsg.StringPtr("Authorization failed.")
		} else if err := env.createPartitions(ctx, rt, r.ValidateOnly); err != nil {
			st.ErrorCode, st.ErrorMessage = errorCode(err), errorMessage(err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return Result{Resp: resp}, nil
}

func (e *Env) createPartitions(ctx context.Context, rt kmsg.CreatePartitionsRequestTopic, validateOnly bool) error {
	t, ok := e.Cache.Topic(rt.Topic)
	if !ok {
		return metadata.ErrUnknownTopic
	}
	have := int32(len(t.Partitions))
	if rt.Count <= have {
		return fmt.Errorf("topic %s has %d partitions, asked for %d: %w", rt.Topic, have, rt.Count, metadata.ErrInvalidPartitions)
	}
	spec := topicSpec{name: rt.Topic, partitions: rt.Count - have, rf: int16(len(t.Partitions[0].Replicas))}
	if rt.Assignment != nil {
		if int32(len(rt.Assignment)) != rt.Count-have {
			return fmt.Errorf("%w: %d assignments for %d new partitions", errInvalidReplicaAssignment, len(rt.Assignment), rt.Count-have)
		}
		spec.assignment = map[int32][]int32{}
		for i, a := range rt.Assignment {
			spec.assignment[have+int32(i)] = a.Replicas
		}
	}
	parts, err := e.place(spec, have)
	if err == nil {
		err = e.checkPartitionLimits(replicaCounts(parts))
	}
	if err != nil || validateOnly {
		return err
	}
	if _, err := e.Store.AddPartitions(ctx, rt.Topic, parts); err != nil {
		return err
	}
	return e.Partitions.Sync()
}
