package handler

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions: v0-5
//
// Behavior:
// * Lists every API in the registration table with its version range.
// * A version above ours is answered by the connection loop with a v0
//   response carrying UNSUPPORTED_VERSION and our ApiVersions range (KIP-511),
//   see UnsupportedApiVersions.
// * v3+: a client software name or version that is empty or not made of
//   letters, digits, '-' and '.' (starting and ending with a letter or
//   digit) is INVALID_REQUEST, with no keys, as Kafka answers it.
// * v3+ (KIP-584): the features, as a Kafka 4.x cluster that finalized
//   transaction.version 2 lists them (SupportedFeatures min 0 max 2,
//   FinalizedFeatures min = max = 2, FinalizedFeaturesEpoch 1, never
//   changing: Strata has no UpdateFeatures). Clients then use KIP-890
//   part 2: EndTxn v5, produce v12 and TxnOffsetCommit v5 without
//   AddPartitionsToTxn or AddOffsetsToTxn.
// * v5+ (KIP-1242): a client that names the cluster and node it means to
//   reach gets REBOOTSTRAP_REQUIRED when either is not ours; naming only
//   one of them is INVALID_REQUEST.

// softwareNameOrVersion is what Kafka accepts as a client's software name
// or version (ApiVersionsRequest's SOFTWARE_NAME_VERSION_PATTERN).
var softwareNameOrVersion = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func handleApiVersions(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.ApiVersionsRequest)
	resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
	if r.Version >= 3 && !(softwareNameOrVersion.MatchString(r.ClientSoftwareName) && softwareNameOrVersion.MatchString(r.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return Result{Resp: resp}, nil
	}
	resp.ApiKeys = apiKeys()
	if r.Version >= 3 {
		addFeatures(resp)
	}
	if r.Version >= 5 && env.Store != nil {
		switch named := r.ClusterID != nil; {
		case named != (r.NodeID >= 0):
			resp.ErrorCode = kerr.InvalidRequest.Code
		case named && (*r.ClusterID != env.Store.ClusterID() || r.NodeID != env.cfg().NodeID):
			resp.ErrorCode = kerr.RebootstrapRequired.Code
		}
	}
	return Result{Resp: resp}, nil
}

// features are the feature flags ApiVersions lists: each supported from
// 0 to its level, and finalized at it.
var features = []struct {
	name  string
	level int16
}{
	{"transaction.version", 2},
}

// featuresEpoch is the FinalizedFeaturesEpoch: the finalized levels never
// change.
const featuresEpoch = 1

func addFeatures(resp *kmsg.ApiVersionsResponse) {
	for _, f := range features {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.name, 0, f.level
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.name, f.level, f.level
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	resp.FinalizedFeaturesEpoch = featuresEpoch
}

// UnsupportedApiVersions is the answer to an ApiVersions request of a
// version we do not serve: v0, UNSUPPORTED_VERSION, and our own range so the
// client can retry with it.
func UnsupportedApiVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	a := table[kmsg.ApiVersions.Int16()]
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = a.Key.Int16(), a.Min, a.Max
	resp.ApiKeys = append(resp.ApiKeys, k)
	return resp
}
