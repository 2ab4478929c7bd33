package handler

import (
	"context"

	"github.com/strata-broker/strata/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
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
		var err error
		switch rr.ResourceType {
		case resourceTopic:
			t, ok := env.Cache.Topic(rr.ResourceName)
			if !ok {
				err = metadata.ErrUnknownTopic
				break
			}
			var next map[string]string
			if next, err = applyIncremental(t.Configs, rr.Configs); err == nil {
				err = env.alterTopicConfigs(ctx, rr.ResourceName, next, r.ValidateOnly)
			}
		case resourceBroker:
			if err = env.checkBrokerResource(rr.ResourceName); err == nil {
				err = errBrokerConfigReadOnly
			}
		default:
			sr.ErrorCode = kerr.InvalidRequest.Code
		}
		if err != nil {
			sr.ErrorCode, sr.ErrorMessage = resourceError(err)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return Result{Resp: resp}, nil
}
