package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions: v0-4
//
// Behavior:
// * Lists every API in the registration table with its version range.
// * A version above ours is answered by the connection loop with a v0
//   response carrying UNSUPPORTED_VERSION and our ApiVersions range (KIP-511),
//   see UnsupportedApiVersions.
// * v3+: client software name and version are not validated.

func handleApiVersions(_ context.Context, _ *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.ApiVersionsRequest)
	resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = apiKeys()
	return Result{Resp: resp}, nil
}

// UnsupportedApiVersions is the answer to an ApiVersions request of a
// version we do not serve: v0, UNSUPPORTED_VERSION, and our own range so the
// client can retry with it.
func UnsupportedApiVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	a := table[18]
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = a.Key, a.Min, a.Max
	resp.ApiKeys = append(resp.ApiKeys, k)
	return resp
}
