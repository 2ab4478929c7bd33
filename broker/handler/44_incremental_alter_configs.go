package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// IncrementalAlterConfigs: v0-1
//
// Behavior:
// * SET, DELETE, APPEND and SUBTRACT (the last two on list keys such as
//   cleanup.policy; on a key without an override they start from its
//   value without one, as in Kafka) change a topic's overrides; the result
//   is validated as a whole (INVALID_CONFIG names the key) and applied live.
// * On a broker resource (a broker id, or "" for the cluster-wide
//   default) they change its dynamic configs the same way (see
//   brokerconfigs.go): log.cleanup.policy is the list key; a static key is
//   INVALID_REQUEST with Kafka's message, and is refused even when the
//   change is valid otherwise.
// * ValidateOnly checks without storing.
// * A resource named twice in one request is INVALID_REQUEST, unchanged.
// * A topic needs ALTER_CONFIGS on it (TOPIC_AUTHORIZATION_FAILED), a
//   broker resource ALTER_CONFIGS on the cluster
//   (CLUSTER_AUTHORIZATION_FAILED), as in Kafka.

func handleIncrementalAlterConfigs(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	named := countResources(r.Resources, func(rr kmsg.IncrementalAlterConfigsRequestResource) resourceKey {
		return resourceKey{rr.ResourceType, rr.ResourceName}
	})
	for _, rr := range r.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		times := named[resourceKey{rr.ResourceType, rr.ResourceName}]
		sr.ErrorCode, sr.ErrorMessage = env.alterResource(ctx, req, rr.ResourceType, rr.ResourceName, times, r.ValidateOnly,
			func(cur map[string]string, isList func(string) bool, below func(string) string) (map[string]string, error) {
				return applyIncremental(cur, rr.Configs, isList, below)
			})
		resp.Resources = append(resp.Resources, sr)
	}
	return Result{Resp: resp}, nil
}
