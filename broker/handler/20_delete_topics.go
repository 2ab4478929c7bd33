package handler

import (
	"context"
	"fmt"

	"github.com/strata-broker/strata/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteTopics: v0-6
//
// Behavior:
// * Removes the topic and its partitions from etcd in one transaction; the
//   partition manager then deletes the local logs.
// * For a tiered topic the same transaction leaves a deleted-topic marker;
//   the remote log managers of all brokers then delete its objects and
//   remote-segment records (tier/remote/deleted.go), also when the
//   partitions' leaders are down.
// * v6+ topics may be named by id; an unknown id is UNKNOWN_TOPIC_ID; a
//   topic named by both name and id, or by neither, is INVALID_REQUEST.
// * Each topic needs DELETE (TOPIC_AUTHORIZATION_FAILED, whether it
//   exists or not; one named by an unknown id is UNKNOWN_TOPIC_ID first).
// * A topic named twice in one request is INVALID_REQUEST for both, as in
//   Kafka; it is not deleted.
// * Internal topics may be deleted, as in Kafka; the broker creates
//   __consumer_offsets again when a group next needs it.
// * A deletion works while the metadata store is out of space (etcd
//   still takes deletions then), so deleting topics frees space; only a
//   tiered topic's, which also records a marker, is then
//   KAFKA_STORAGE_ERROR.

func handleDeleteTopics(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DeleteTopicsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
		err  error // how the request names it wrongly
	}
	var targets []target
	names, ids := map[string]int{}, map[[16]byte]int{}
	for _, n := range r.TopicNames {
		targets = append(targets, target{name: kmsg.StringPtr(n)})
		names[n]++
	}
	for _, t := range r.Topics {
		tg := target{name: t.Topic, id: t.TopicID}
		switch {
		case t.Topic == nil && t.TopicID == [16]byte{}:
			tg.err = fmt.Errorf("%w: neither topic name nor id given", errInvalidRequest)
		case t.Topic != nil && t.TopicID != [16]byte{}:
			tg.err = fmt.Errorf("%w: topic name and id given together", errInvalidRequest)
		case t.Topic != nil:
			names[*t.Topic]++
		default:
			ids[t.TopicID]++
		}
		targets = append(targets, tg)
	}
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		if tg.err == nil && (tg.name != nil && names[*tg.name] > 1 || tg.name == nil && ids[tg.id] > 1) {
			tg.err = fmt.Errorf("%w: topic named more than once in one request", errInvalidRequest)
		}
		if tg.err != nil {
			st.ErrorCode, st.ErrorMessage = errorCode(tg.err), errorMessage(tg.err)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		var (
			t  metadata.Topic
			ok bool
		)
		if tg.name != nil {
			t, ok = env.Cache.Topic(*tg.name)
		} else {
			t, ok = env.Cache.TopicByID(metadata.TopicID(tg.id))
		}
		name := topicName("", t, ok)
		if tg.name != nil {
			name = *tg.name
		}
		switch {
		case !ok && tg.name == nil:
			st.ErrorCode = kerr.UnknownTopicID.Code
		case !env.allowedTopic(req, aclDelete, name):
			// Named by id, its name is told only to who may describe it.
			if tg.name == nil && env.allowedTopic(req, aclDescribe, name) {
				st.Topic = kmsg.StringPtr(name)
			}
			st.ErrorCode, st.ErrorMessage = kerr.TopicAuthorizationFailed.Code, kmsg.StringPtr("Authorization failed.")
		case !ok:
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			st.Topic, st.TopicID = kmsg.StringPtr(t.Name), t.ID
			if _, err := env.Store.DeleteTopic(ctx, t.Name); err != nil {
				st.ErrorCode, st.ErrorMessage = errorCode(err), errorMessage(err)
			} else {
				env.Log.Info("deleted topic", "topic", t.Name)
				if err := env.Partitions.Sync(); err != nil {
					env.Log.Error("remove partitions of deleted topic", "topic", t.Name, "err", err)
				}
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return Result{Resp: resp}, nil
}
