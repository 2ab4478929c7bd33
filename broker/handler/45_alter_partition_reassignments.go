package handler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/strata-broker/strata/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterPartitionReassignments: v0
//
// Behavior:
// * Any broker accepts the request and records it in the metadata store
//   (metadata.Reassignments); the controller carries it out
//   (controller.RunReassignments): add the new replicas, wait until they
//   are in the ISR, move leadership off a removed leader, then drop the
//   removed replicas, whose brokers delete their logs.
// * Target replicas must be distinct, registered brokers
//   (INVALID_REPLICA_ASSIGNMENT otherwise).
// * Targets that would take a broker past the partition limit it
//   registered, counting the request's earlier partitions, are
//   POLICY_VIOLATION.
// * Null replicas cancels a pending reassignment, restoring the replica
//   set the partition had before it (NO_REASSIGNMENT_IN_PROGRESS if none).
// * A new request for a partition already being reassigned replaces its
//   target; the original replica set is kept for a later cancel.
// * Needs ALTER on the cluster: CLUSTER_AUTHORIZATION_FAILED at the top
//   level and for every partition, as in Kafka.

// errNoReassignment: a cancel found no reassignment to cancel.
var errNoReassignment = errors.New("handler: no reassignment in progress")

func handleAlterPartitionReassignments(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	if !env.allowedCluster(req, aclAlter) {
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr("Authorization failed.")
		for _, rt := range r.Topics {
			st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.ErrorMessage = rp.Partition, resp.ErrorCode, resp.ErrorMessage
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return Result{Resp: resp}, nil
	}
	pending, err := pendingReassignments(ctx, env)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, errorMessage(err)
		return Result{Resp: resp}, nil
	}
	adding := map[int32]int{} // replicas the request's accepted targets add, by broker
	for _, rt := range r.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			if err := env.reassign(ctx, pending, adding, rt.Topic, rp.Partition, rp.Replicas); err != nil {
				sp.ErrorCode, sp.ErrorMessage = reassignCode(err), errorMessage(err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return Result{Resp: resp}, nil
}

// reassign validates and records one partition's request; adding counts
// the replicas the request's earlier targets add, by broker, and takes
// this one's.
func (e *Env) reassign(ctx context.Context, pending map[reassignKey]metadata.Reassignment, adding map[int32]int, topic string, p int32, replicas []int32) error {
	s, ok := e.Cache.Partition(topic, p)
	if !ok {
		return fmt.Errorf("reassign %s-%d: %w", topic, p, metadata.ErrUnknownTopic)
	}
	cur, inProgress := pending[reassignKey{topic, p}]
	if replicas == nil {
		if !inProgress {
			return fmt.Errorf("cancel reassignment of %s-%d: %w", topic, p, errNoReassignment)
		}
		cur.Target = cur.Original
		return e.Store.PutReassignment(ctx, cur)
	}
	if len(replicas) == 0 {
		return fmt.Errorf("%w: %s-%d: empty replica list", errInvalidReplicaAssignment, topic, p)
	}
	for i, id := range replicas {
		if slices.Contains(replicas[:i], id) {
			return fmt.Errorf("%w: %s-%d: replica %d repeated", errInvalidReplicaAssignment, topic, p, id)
		}
		if _, ok := e.Cache.Broker(id); !ok {
			return fmt.Errorf("%w: %s-%d: broker %d is not registered", errInvalidReplicaAssignment, topic, p, id)
		}
	}
	more := maps.Clone(adding)
	for _, id := range replicas {
		if !slices.Contains(s.Replicas, id) {
			more[id]++
		}
	}
	if err := e.checkPartitionLimits(more); err != nil {
		return fmt.Errorf("reassign %s-%d: %w", topic, p, err)
	}
	next := metadata.Reassignment{Topic: topic, Partition: p, Target: slices.Clone(replicas), Original: s.Replicas}
	if inProgress {
		next.Original = cur.Original
	}
	if err := e.Store.PutReassignment(ctx, next); err != nil {
		return err
	}
	maps.Copy(adding, more)
	return nil
}

// reassignKey names a partition among the pending reassignments.
type reassignKey struct {
	topic     string
	partition int32
}

// pendingReassignments reads the reassignment requests from the store.
func pendingReassignments(ctx context.Context, env *Env) (map[reassignKey]metadata.Reassignment, error) {
	rs, err := env.Store.Reassignments(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[reassignKey]metadata.Reassignment, len(rs))
	for _, r := range rs {
		out[reassignKey{r.Topic, r.Partition}] = r
	}
	return out, nil
}

// reassignCode maps a reassignment error to its Kafka code.
func reassignCode(err error) int16 {
	if errors.Is(err, errNoReassignment) {
		return kerr.NoReassignmentInProgress.Code
	}
	return errorCode(err)
}
