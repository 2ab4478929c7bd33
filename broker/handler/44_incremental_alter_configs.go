package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// IncrementalAlterConfigs: v0-1
//
// Behavior:
// * SET, DELETE, APPEND and SUBTRACT (the last two on list keys such as
//   cleanup.policy) change a topic's overrides; the result is validated as
//   a whole (INVALID_CONFIG names the key) and applied live.
// * Broker resources are static: INVALID_REQUEST.
// * ValidateOnly checks without storing.

func handleIncrementalAlterConfigs(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range r.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		sr.ErrorCode, sr.ErrorMessage = env.alterResource(ctx, rr.ResourceType, rr.ResourceName, r.ValidateOnly,
			func(cur map[string]string) (map[string]string, error) { return applyIncremental(cur, rr.Configs) })
		resp.Resources = append(resp.Resources, sr)
	}
	return Result{Resp: resp}, nil
}
