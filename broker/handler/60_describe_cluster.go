package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster: v0-1
//
// Behavior:
// * Lists the live brokers from the metadata cache, the cluster id and the
//   controller.
// * v1 EndpointType: 1 (brokers) is served; 2 (controllers) is
//   UNSUPPORTED_ENDPOINT_TYPE, as Strata's controller runs inside brokers.

func handleDescribeCluster(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = r.EndpointType
	if r.Version >= 1 && r.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return Result{Resp: resp}, nil
	}
	resp.ClusterID = env.Store.ClusterID()
	resp.ControllerID = env.ControllerID()
	resp.ClusterAuthorizedOperations = -2147483648
	for _, b := range env.Cache.Brokers() {
		sb := kmsg.NewDescribeClusterResponseBroker()
		sb.NodeID, sb.Host, sb.Port = b.ID, b.Host, b.Port
		if b.Rack != "" {
			sb.Rack = kmsg.StringPtr(b.Rack)
		}
		resp.Brokers = append(resp.Brokers, sb)
	}
	return Result{Resp: resp}, nil
}
