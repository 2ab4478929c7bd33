package handler

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/txn"
	"github.com/strata-broker/strata/metadata"
)

// FindCoordinator: v0-5
//
// Behavior:
// * A group's coordinator is the leader of __consumer_offsets partition
//   abs(javaStringHashCode(group)) % partitions (Kafka's partitionFor).
// * __consumer_offsets is created on first need, through the same path as
//   CreateTopics: offsets.topic.num.partitions partitions, replication
//   factor min(offsets.topic.replication.factor, live brokers),
//   cleanup.policy=compact, segment.bytes=offsets.topic.segment.bytes.
// * A transactional id's coordinator (key type 1) is the leader of
//   __transaction_state partition txn.PartitionFor(id), the topic created
//   on first need as Kafka does (transactionTopic).
// * The coordinator is given at its endpoint of the listener the request
//   came in on.
// * A partition without a live leader is COORDINATOR_NOT_AVAILABLE, and
//   one whose leader has no endpoint on that listener; so is
//   a transaction key on a broker without a transaction coordinator.
//   Other key types are INVALID_REQUEST.
// * The coordinator may still be loading the partition: the group and
//   transaction APIs then answer COORDINATOR_LOAD_IN_PROGRESS, as in Kafka.
//
// * A key needs DESCRIBE on its group or transactional id
//   (GROUP_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
//
// Version notes:
// * v1: key type, throttle, error message; v3: flexible
// * v4: batched keys (KIP-699), answered per key; v5: no change here

func handleFindCoordinator(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	for _, k := range keys {
		if code := env.coordinatorKeyDenied(req, r.CoordinatorType, k); code != 0 {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Port, c.ErrorCode = k, -1, -1, code
			resp.Coordinators = append(resp.Coordinators, c)
			continue
		}
		resp.Coordinators = append(resp.Coordinators, env.findCoordinator(ctx, r.CoordinatorType, k, req.listener()))
	}
	if r.Version < 4 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
	}
	return Result{Resp: resp}, nil
}

// coordinatorKeyDenied is the code of a key the principal may not
// DESCRIBE: a group's GROUP_AUTHORIZATION_FAILED, a transactional id's
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; 0 when it may.
func (e *Env) coordinatorKeyDenied(req *Request, keyType int8, key string) int16 {
	switch {
	case keyType == 0 && !e.allowedGroup(req, aclDescribe, key):
		return kerr.GroupAuthorizationFailed.Code
	case keyType == 1 && !e.allowedTxnID(req, aclDescribe, key):
		return kerr.TransactionalIDAuthorizationFailed.Code
	}
	return 0
}

// findCoordinator answers one key.
func (e *Env) findCoordinator(ctx context.Context, keyType int8, key, listener string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(code int16, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode, c.ErrorMessage = code, kmsg.StringPtr(msg)
		return c
	}
	var (
		topic        = e.offsetsTopic
		name         = group.TopicName
		partitionFor = group.PartitionFor
	)
	switch keyType {
	case 0:
	case 1:
		if e.Txn == nil {
			return fail(kerr.CoordinatorNotAvailable.Code, "transactions are not served")
		}
		topic, name, partitionFor = e.transactionTopic, txn.TopicName, txn.PartitionFor
	default:
		return fail(kerr.InvalidRequest.Code, "unknown coordinator key type "+strconv.Itoa(int(keyType)))
	}
	t, err := topic(ctx)
	if err != nil {
		e.Log.Warn("create "+name, "err", err)
		return fail(kerr.CoordinatorNotAvailable.Code, err.Error())
	}
	st, ok := t.Partitions[partitionFor(key, int32(len(t.Partitions)))]
	if !ok {
		return fail(kerr.CoordinatorNotAvailable.Code, "coordinator partition missing")
	}
	b, ok := e.Cache.Broker(st.Leader)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable.Code, "coordinator partition has no live leader")
	}
	if b.ID == e.Self.ID {
		b = e.Self
	}
	host, port, ok := endpoint(b, listener)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable.Code, "the coordinator has no endpoint on listener "+listener)
	}
	c.NodeID, c.Host, c.Port = b.ID, host, port
	return c
}

// internalTopic is an internal topic a client asked for (Metadata with
// auto-creation): __consumer_offsets is created with its own
// configuration, as Kafka's AutoTopicCreationManager does; the others are
// not created while nothing in the broker uses them (UNKNOWN_TOPIC_OR_PARTITION).
func (e *Env) internalTopic(ctx context.Context, name string) (metadata.Topic, error) {
	if name == group.TopicName {
		return e.offsetsTopic(ctx)
	}
	return metadata.Topic{}, fmt.Errorf("%w: internal topic %s is not served", metadata.ErrUnknownTopic, name)
}

// offsetsTopic returns __consumer_offsets, creating it if it does not
// exist yet.
func (e *Env) offsetsTopic(ctx context.Context) (metadata.Topic, error) {
	cfg := e.cfg()
	return e.internalTopicOf(ctx, topicSpec{
		name:       group.TopicName,
		partitions: cfg.OffsetsTopicNumPartitions,
		rf:         e.clampRF(cfg.OffsetsTopicReplicationFactor),
		configs: map[string]string{
			"cleanup.policy":   "compact",
			"segment.bytes":    strconv.Itoa(int(cfg.OffsetsTopicSegmentBytes)),
			"compression.type": "producer",
		},
	})
}

// transactionTopic returns __transaction_state, creating it if it does
// not exist yet, as Kafka creates it on the first FindCoordinator of a
// transaction key: transaction.state.log.num.partitions partitions,
// replication factor transaction.state.log.replication.factor clamped to
// the live brokers, min.insync.replicas transaction.state.log.min.isr
// (clamped to that replication factor, so that a clamped topic stays
// writable), compacted, segment.bytes
// transaction.state.log.segment.bytes.
func (e *Env) transactionTopic(ctx context.Context) (metadata.Topic, error) {
	cfg := e.cfg()
	rf := e.clampRF(cfg.TransactionStateLogReplicationFactor)
	return e.internalTopicOf(ctx, topicSpec{
		name:       txn.TopicName,
		partitions: cfg.TransactionStateLogNumPartitions,
		rf:         rf,
		configs: map[string]string{
			"cleanup.policy":      "compact",
			"segment.bytes":       strconv.Itoa(int(cfg.TransactionStateLogSegmentBytes)),
			"min.insync.replicas": strconv.Itoa(int(min(cfg.TransactionStateLogMinISR, int32(rf)))),
			"compression.type":    "producer",
		},
	})
}

// clampRF is an internal topic's replication factor: the configured one,
// at most the live brokers, at least 1.
func (e *Env) clampRF(rf int16) int16 {
	return max(min(rf, int16(len(e.Cache.Brokers()))), 1)
}

// internalTopicOf returns the internal topic of spec, creating it if it
// does not exist yet (another broker creating it first is fine).
func (e *Env) internalTopicOf(ctx context.Context, spec topicSpec) (metadata.Topic, error) {
	if t, ok := e.Cache.Topic(spec.name); ok {
		return t, nil
	}
	t, err := e.createTopic(ctx, spec, false)
	if errors.Is(err, metadata.ErrTopicExists) {
		if t, ok := e.Cache.Topic(spec.name); ok {
			return t, nil
		}
	}
	if err != nil {
		return metadata.Topic{}, err
	}
	e.Log.Info("created "+spec.name, "partitions", len(t.Partitions), "replication.factor", spec.rf)
	return t, nil
}
