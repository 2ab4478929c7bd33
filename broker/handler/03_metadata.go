package handler

import (
	"context"
	"slices"
	"sort"

	"github.com/strata-broker/strata/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metadata: v0-12
//
// Behavior:
// * Answered from the metadata cache that the etcd watch feeds.
// * A null topic list (v1+; an empty one in v0) asks for every topic.
// * Unknown topics are created when auto.create.topics.enable is set and
//   the request allows it (always for v0-3); else UNKNOWN_TOPIC_OR_PARTITION.
//   The request that creates a topic (or finds it created meanwhile) gets
//   it as Kafka answers it, LEADER_NOT_AVAILABLE without partitions or
//   topic id, and clients ask again; the next request sees its leaders.
//   Produce never creates a topic (UNKNOWN_TOPIC_OR_PARTITION), as in
//   Kafka. __consumer_offsets is created as FindCoordinator creates it
//   (its own partition count and configs); other internal topics are not
//   created.
// * v12+ topics may be asked for by id; unknown ids get UNKNOWN_TOPIC_ID.
//   A v10-11 request naming a topic by id (or by a null name) is answered
//   as Kafka does: INVALID_REQUEST for every topic asked for, and nothing
//   else.
// * Kafka's internal topics (__consumer_offsets, …) are flagged internal;
//   other names starting with "__" are ordinary topics, as in Kafka.
// * Brokers are given with their endpoint of the listener the request
//   came in on; brokers without that listener are left out, and a
//   partition led by one has no leader: LISTENER_NOT_FOUND (v6+), else
//   LEADER_NOT_AVAILABLE, as in Kafka.
// * Authorization, as Kafka's: a listing of every topic leaves out those
//   the principal may not DESCRIBE; a topic asked for by name without
//   DESCRIBE is TOPIC_AUTHORIZATION_FAILED whether it exists or not, by
//   id (not secret) TOPIC_AUTHORIZATION_FAILED with a null name. Creating
//   an unknown topic needs CREATE on the cluster or on the topic
//   (TOPIC_AUTHORIZATION_FAILED).
// * Authorized operations (KIP-430): each described topic's when asked
//   for (v8+), the cluster's (v8-10; 0 without DESCRIBE on it);
//   -2147483648 when not asked for, as Kafka sends.

func handleMetadata(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.MetadataRequest)
	resp := r.ResponseKind().(*kmsg.MetadataResponse)
	if r.Version < 12 && slices.ContainsFunc(r.Topics, func(rt kmsg.MetadataRequestTopic) bool {
		return rt.Topic == nil || rt.TopicID != [16]byte{}
	}) {
		for _, rt := range r.Topics {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID, mt.ErrorCode = kmsg.StringPtr(""), rt.TopicID, kerr.InvalidRequest.Code
			if rt.Topic != nil {
				mt.Topic = rt.Topic
			}
			resp.Topics = append(resp.Topics, mt)
		}
		return Result{Resp: resp}, nil
	}
	listener := req.listener()
	reachable := map[int32]bool{}
	for _, b := range env.Cache.Brokers() {
		host, port, ok := endpoint(b, listener)
		if !ok {
			continue // no endpoint on this client's listener: left out, as Kafka does
		}
		reachable[b.ID] = true
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = b.ID, host, port
		if b.Rack != "" {
			mb.Rack = kmsg.StringPtr(b.Rack)
		}
		resp.Brokers = append(resp.Brokers, mb)
	}
	resp.ClusterID = kmsg.StringPtr(env.Store.ClusterID())
	resp.ControllerID = env.ControllerID()

	if r.IncludeClusterAuthorizedOperations { // v8-10 only
		resp.AuthorizedOperations = env.clusterAuthorizedOperations(req)
	}
	// answer adds a topic the principal may describe, with its
	// authorized operations when asked for.
	answer := func(mt kmsg.MetadataResponseTopic) {
		if r.IncludeTopicAuthorizedOperations && mt.Topic != nil {
			mt.AuthorizedOperations = env.authorizedOperations(req, resTopic, *mt.Topic)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	all := r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0)
	if all {
		for _, t := range env.Cache.Topics() {
			if env.allowedTopic(req, aclDescribe, t.Name) { // the others are left out
				answer(metadataTopic(t, r.Version, reachable))
			}
		}
		return Result{Resp: resp}, nil
	}
	allowCreate := env.cfg().AutoCreateTopics && (r.Version < 4 || r.AllowAutoTopicCreation)
	for _, rt := range r.Topics {
		if rt.Topic == nil {
			t, ok := env.Cache.TopicByID(metadata.TopicID(rt.TopicID))
			if !ok || !env.allowedTopic(req, aclDescribe, t.Name) {
				mt := kmsg.NewMetadataResponseTopic()
				mt.TopicID = rt.TopicID
				mt.ErrorCode = kerr.UnknownTopicID.Code
				if ok { // topic ids are not secret: Kafka says so
					mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
				}
				resp.Topics = append(resp.Topics, mt)
				continue
			}
			answer(metadataTopic(t, r.Version, reachable))
			continue
		}
		name := *rt.Topic
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(name)
		if !env.allowedTopic(req, aclDescribe, name) {
			// Whether it exists is not told.
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if t, ok := env.Cache.Topic(name); ok {
			answer(metadataTopic(t, r.Version, reachable))
			continue
		}
		mt.IsInternal = isInternalTopic(name)
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		if allowCreate && !env.allowedCluster(req, aclCreate) && !env.allowedTopic(req, aclCreate, name) {
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if allowCreate {
			mt.ErrorCode = kerr.LeaderNotAvailable.Code
			if err := env.autoCreate(ctx, name); err != nil {
				mt.ErrorCode = errorCode(err)
			}
		}
		answer(mt)
	}
	return Result{Resp: resp}, nil
}

// metadataTopic answers one topic. A partition whose leader has no
// endpoint on the client's listener (not in reachable) is answered as
// Kafka does: no leader, LISTENER_NOT_FOUND (LEADER_NOT_AVAILABLE before
// v6).
func metadataTopic(t metadata.Topic, version int16, reachable map[int32]bool) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic = kmsg.StringPtr(t.Name)
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(t.Name)
	idxs := make([]int32, 0, len(t.Partitions))
	for i := range t.Partitions {
		idxs = append(idxs, i)
	}
	sort.Slice(idxs, func(i, j int) bool { return idxs[i] < idxs[j] })
	for _, i := range idxs {
		st := t.Partitions[i]
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.LeaderEpoch = i, st.Leader, st.LeaderEpoch
		mp.Replicas, mp.ISR = st.Replicas, st.ISR
		switch {
		case st.Leader < 0:
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		case !reachable[st.Leader] && version >= 6:
			mp.Leader, mp.ErrorCode = -1, kerr.ListenerNotFound.Code
		case !reachable[st.Leader]:
			mp.Leader, mp.ErrorCode = -1, kerr.LeaderNotAvailable.Code
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
