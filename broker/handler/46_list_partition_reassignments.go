package handler

import (
	"context"
	"maps"
	"slices"

	"github.com/strata-broker/strata/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListPartitionReassignments: v0
//
// Behavior:
// * Lists the reassignments pending in the metadata store
//   (AlterPartitionReassignments), all of them for null topics, else those
//   of the partitions asked for (partitions without one are left out, as
//   Kafka does).
// * Replicas is the partition's current replica set; AddingReplicas the
//   target replicas not in the original set; RemovingReplicas the
//   original replicas not in the target.
// * Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED).

func handleListPartitionReassignments(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.ListPartitionReassignmentsRequest)
	resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !env.allowedCluster(req, aclDescribe) {
		resp.ErrorCode, resp.ErrorMessage = kerr.ClusterAuthorizationFailed.Code, kmsg.StringPtr("Authorization failed.")
		return Result{Resp: resp}, nil
	}
	pending, err := pendingReassignments(ctx, env)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, errorMessage(err)
		return Result{Resp: resp}, nil
	}
	byTopic := map[string][]metadata.Reassignment{}
	if r.Topics == nil {
		for k, ra := range pending {
			byTopic[k.topic] = append(byTopic[k.topic], ra)
		}
	}
	for _, rt := range r.Topics {
		for _, p := range rt.Partitions {
			if ra, ok := pending[reassignKey{rt.Topic, p}]; ok {
				byTopic[rt.Topic] = append(byTopic[rt.Topic], ra)
			}
		}
	}
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		st := kmsg.NewListPartitionReassignmentsResponseTopic()
		st.Topic = topic
		ras := byTopic[topic]
		slices.SortFunc(ras, func(a, b metadata.Reassignment) int { return int(a.Partition - b.Partition) })
		for _, ra := range ras {
			s, ok := env.Cache.Partition(ra.Topic, ra.Partition)
			if !ok {
				continue
			}
			sp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			sp.Partition = ra.Partition
			sp.Replicas = s.Replicas
			sp.AddingReplicas = without(ra.Target, ra.Original)
			sp.RemovingReplicas = without(ra.Original, ra.Target)
			st.Partitions = append(st.Partitions, sp)
		}
		if len(st.Partitions) > 0 {
			resp.Topics = append(resp.Topics, st)
		}
	}
	return Result{Resp: resp}, nil
}

// without returns the members of a that are not in b, never nil.
func without(a, b []int32) []int32 {
	out := []int32{}
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
