package handler

import (
	"context"

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
// * v6+ topics may be named by id; an unknown id is UNKNOWN_TOPIC_ID.

func handleDeleteTopics(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DeleteTopicsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type target struct {
		name *string
		id   [16]byte
	}
	var targets []target
	for _, n := range r.TopicNames {
		targets = append(targets, target{name: kmsg.StringPtr(n)})
	}
	for _, t := range r.Topics {
		targets = append(targets, target{name: t.Topic, id: t.TopicID})
	}
	for _, tg := range targets {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = tg.name, tg.id
		var (
			t  metadata.Topic
			ok bool
		)
		if tg.name != nil {
			t, ok = env.Cache.Topic(*tg.name)
		} else {
			t, ok = env.Cache.TopicByID(metadata.TopicID(tg.id))
		}
		switch {
		case !ok && tg.name == nil:
			st.ErrorCode = kerr.UnknownTopicID.Code
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
