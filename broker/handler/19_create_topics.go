package handler

import (
	"context"
	"fmt"

	"github.com/strata-broker/strata/config"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateTopics: v0-7
//
// Behavior:
// * NumPartitions/ReplicationFactor -1 take num.partitions and
//   default.replication.factor; other values below 1 are
//   INVALID_REPLICATION_FACTOR and INVALID_PARTITIONS, with Kafka's
//   messages; more replicas than live brokers is
//   INVALID_REPLICATION_FACTOR; more than 10,000 partitions
//   (metadata.MaxPartitionsPerWrite: one atomic metadata write) is
//   POLICY_VIOLATION, as Kafka's controller answers an operation of more
//   than 10,000 records; a metadata store out of space is
//   KAFKA_STORAGE_ERROR. Manual assignments must give every
//   partition from 0 on once, the same number of distinct live brokers
//   each (INVALID_REPLICA_ASSIGNMENT otherwise).
// * A name differing from an existing topic's only in '.' against '_' is
//   INVALID_TOPIC_EXCEPTION, as in Kafka.
// * Config overrides are validated by the config package: an unknown key or
//   bad value is INVALID_CONFIG with a message naming the key; so is a null
//   value.
// * A topic named twice in one request is INVALID_REQUEST for both.
// * Kafka's internal topics (__consumer_offsets, __transaction_state,
//   __share_group_state) are the broker's: it creates them itself, with
//   their own configuration (FindCoordinator, or Metadata asking for
//   them); a client's request for one is INVALID_REQUEST, as Kafka's
//   controller answers for its metadata topic.
// * Replicas that would take a broker past the partition limit it
//   registered (max.broker.partitions, capped by its open files) are
//   POLICY_VIOLATION with a message naming the broker and the limit, as
//   is an auto-created topic (Metadata) that would.
// * Each topic needs CREATE on the cluster or on the topic
//   (TOPIC_AUTHORIZATION_FAILED, "Authorization failed."); its configs
//   are answered only with DESCRIBE_CONFIGS on it (else
//   TopicConfigErrorCode TOPIC_AUTHORIZATION_FAILED), as in Kafka.
// * v1+ ValidateOnly checks without creating.
// * v5+ answers the partitions, replication factor and effective configs;
//   v7+ the topic id.

func handleCreateTopics(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.CreateTopicsRequest)
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range r.Topics {
		seen[rt.Topic]++
	}
	clusterCreate := env.allowedCluster(req, aclCreate)
	for _, rt := range r.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		if seen[rt.Topic] > 1 {
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = kmsg.StringPtr("topic named more than once in one request")
			resp.Topics = append(resp.Topics, st)
			continue
		}
		if !clusterCreate && !env.allowedTopic(req, aclCreate, rt.Topic) {
			st.ErrorCode, st.ErrorMessage = kerr.TopicAuthorizationFailed.Code, kmsg.StringPtr("Authorization failed.")
			resp.Topics = append(resp.Topics, st)
			continue
		}
		spec, err := createSpec(rt)
		if err != nil {
			st.ErrorCode, st.ErrorMessage = errorCode(err), errorMessage(err)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		t, err := env.createTopic(ctx, spec, r.ValidateOnly)
		if err != nil {
			st.ErrorCode = errorCode(err)
			st.ErrorMessage = errorMessage(err)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = t.ID
		st.NumPartitions = int32(len(t.Partitions))
		st.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
		if !env.allowedTopic(req, aclDescribeConfigs, rt.Topic) {
			st.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, st)
			continue
		}
		for _, e := range env.cfg().DescribeTopic(spec.configs) {
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name, c.Value, c.ReadOnly, c.Source, c.IsSensitive = e.Name, kmsg.StringPtr(e.Value), e.ReadOnly, e.Source, e.Sensitive
			st.Configs = append(st.Configs, c)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return Result{Resp: resp}, nil
}

// createSpec reads one topic of the request, refusing what Kafka refuses
// before placement: internal topics (INVALID_REQUEST), null config
// values (INVALID_CONFIG), a manual
// assignment together with a count or replication factor
// (INVALID_REQUEST), a partition assigned twice
// (INVALID_REPLICA_ASSIGNMENT).
func createSpec(rt kmsg.CreateTopicsRequestTopic) (topicSpec, error) {
	spec := topicSpec{name: rt.Topic, partitions: rt.NumPartitions, rf: rt.ReplicationFactor, configs: map[string]string{}}
	if isInternalTopic(rt.Topic) {
		return spec, fmt.Errorf("%w: Creation of internal topic %s is prohibited: the broker creates it", errInvalidRequest, rt.Topic)
	}
	for _, c := range rt.Configs {
		if c.Value == nil {
			return spec, fmt.Errorf("%w: null value not supported for topic config %s", config.ErrInvalidValue, c.Name)
		}
		spec.configs[c.Name] = *c.Value
	}
	if len(rt.ReplicaAssignment) == 0 {
		return spec, nil
	}
	if rt.NumPartitions != -1 || rt.ReplicationFactor != -1 {
		return spec, fmt.Errorf("%w: replica assignment given with a partition count or replication factor", errInvalidRequest)
	}
	spec.assignment = map[int32][]int32{}
	for _, a := range rt.ReplicaAssignment {
		if _, dup := spec.assignment[a.Partition]; dup {
			return spec, fmt.Errorf("%w: partition %d assigned twice", errInvalidReplicaAssignment, a.Partition)
		}
		spec.assignment[a.Partition] = a.Replicas
	}
	return spec, nil
}
