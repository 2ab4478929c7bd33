package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterConfigs: v0-2
//
// Behavior:
// * Replaces a topic's whole override set (keys not named return to their
//   defaults), as Kafka does; validated first, INVALID_CONFIG names the key.
// * Changes apply to the live partitions at once, without a restart.
// * A broker resource (a broker id, or "" for the cluster-wide default)
//   has its whole set of dynamic configs replaced the same way (see
//   brokerconfigs.go); a static key is INVALID_REQUEST with Kafka's
//   message.
// * ValidateOnly checks without storing.
// * A resource named twice in one request is INVALID_REQUEST, unchanged.
// * A topic needs ALTER_CONFIGS on it (TOPIC_AUTHORIZATION_FAILED), a
//   broker resource ALTER_CONFIGS on the cluster
//   (CLUSTER_AUTHORIZATION_FAILED), as in Kafka.

func handleAlterConfigs(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.AlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
	named := countResources(r.Resources, func(rr kmsg.AlterConfigsRequestResource) resourceKey {
		return resourceKey{rr.ResourceType, rr.ResourceName}
	})
	for _, rr := range r.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		times := named[resourceKey{rr.ResourceType, rr.ResourceName}]
		sr.ErrorCode, sr.ErrorMessage = env.alterResource(ctx, req, rr.ResourceType, rr.ResourceName, times, r.ValidateOnly,
			func(map[string]string, func(string) bool, func(string) string) (map[string]string, error) {
				next := map[string]string{}
				for _, c := range rr.Configs {
					if c.Value != nil {
						next[c.Name] = *c.Value
					}
				}
				return next, nil
			})
		resp.Resources = append(resp.Resources, sr)
	}
	return Result{Resp: resp}, nil
}
