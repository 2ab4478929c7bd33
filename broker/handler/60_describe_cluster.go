package handler

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster: v0-1
//
// Behavior:
// * Lists the live brokers from the metadata cache, the cluster id and the
//   controller; each broker with its endpoint of the listener the request
//   came in on, brokers without that listener left out.
// * v1 EndpointType: 1 (brokers) is served; 2 (controllers) is
//   MISMATCHED_ENDPOINT_TYPE, as a Kafka broker answers it (Strata's
//   controller runs inside brokers and serves no endpoint of its own); any
//   other type is UNSUPPORTED_ENDPOINT_TYPE.
// * Anyone may describe the cluster, as in Kafka; the authorized
//   operations asked for (KIP-430) are the cluster operations the
//   principal may do, 0 without DESCRIBE on the cluster.

func handleDescribeCluster(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = r.EndpointType
	switch {
	case r.Version < 1 || r.EndpointType == 1:
	case r.EndpointType == 2:
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr("a broker endpoint was asked for controllers")
		return Result{Resp: resp}, nil
	default:
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("unknown endpoint type %d", r.EndpointType))
		return Result{Resp: resp}, nil
	}
	resp.ClusterID = env.Store.ClusterID()
	resp.ControllerID = env.ControllerID()
	resp.ClusterAuthorizedOperations = notRequested
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = env.clusterAuthorizedOperations(req)
	}
	for _, b := range env.Cache.Brokers() {
		host, port, ok := endpoint(b, req.listener())
		if !ok {
			continue // no endpoint on this client's listener
		}
		sb := kmsg.NewDescribeClusterResponseBroker()
		sb.NodeID, sb.Host, sb.Port = b.ID, host, port
		if b.Rack != "" {
			sb.Rack = kmsg.StringPtr(b.Rack)
		}
		resp.Brokers = append(resp.Brokers, sb)
	}
	return Result{Resp: resp}, nil
}
