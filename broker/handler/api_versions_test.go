package handler

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/wire"
)

type apiVersionsRow = apiRow[*kmsg.ApiVersionsResponse]

func TestApiVersions(t *testing.T) {
	runRows(t, tableOpts{}, apiVersionsRows())
}

func apiVersionsRows() []apiVersionsRow {
	all := versionsFrom(kmsg.ApiVersions, 0)
	// v3+ carry the client's software name and version; older versions
	// do not, so the checks pass whatever the request held.
	software := func(name, version string) func(*testing.T, *scene) kmsg.Request {
		return func(*testing.T, *scene) kmsg.Request {
			req := apiVersionsReq()
			req.ClientSoftwareName, req.ClientSoftwareVersion = name, version
			return req
		}
	}
	// v5 names the cluster and node the client means to reach (KIP-1242).
	target := func(cluster string, node int32) func(*testing.T, *scene) kmsg.Request {
		return func(_ *testing.T, s *scene) kmsg.Request {
			req := apiVersionsReq()
			switch cluster {
			case "":
			case "ours":
				req.ClusterID = kmsg.StringPtr(s.store.ClusterID())
			default:
				req.ClusterID = kmsg.StringPtr(cluster)
			}
			req.NodeID = node
			return req
		}
	}
	return []apiVersionsRow{
		{
			name:     "lists the registration table",
			versions: all,
			req:      func(*testing.T, *scene) kmsg.Request { return apiVersionsReq() },
			want:     wantApiVersions(0),
		},
		{
			// Kafka 4.x with transaction.version 2 finalized: clients turn
			// on KIP-890 part 2.
			name: "transaction version 2 finalized", versions: all,
			req: func(*testing.T, *scene) kmsg.Request { return apiVersionsReq() },
			want: func(t *testing.T, s *scene, resp *kmsg.ApiVersionsResponse) {
				if s.version < 3 {
					return // the fields are not on the wire
				}
				sf, ff := resp.SupportedFeatures, resp.FinalizedFeatures
				if len(sf) != 1 || sf[0].Name != "transaction.version" || sf[0].MinVersion != 0 || sf[0].MaxVersion != 2 {
					t.Errorf("supported features %+v, want transaction.version 0-2", sf)
				}
				if len(ff) != 1 || ff[0].Name != "transaction.version" || ff[0].MinVersionLevel != 2 || ff[0].MaxVersionLevel != 2 {
					t.Errorf("finalized features %+v, want transaction.version 2", ff)
				}
				if resp.FinalizedFeaturesEpoch != 1 {
					t.Errorf("finalized features epoch %d, want 1", resp.FinalizedFeaturesEpoch)
				}
			},
		},
		{name: "Java client's software", versions: all, req: software("apache-kafka-java", "3.9.0"), want: wantApiVersions(0)},
		{name: "franz-go's software", versions: all, req: software("kgo", "v1.22.3"), want: wantApiVersions(0)},
		{
			name: "empty software name", versions: all, req: software("", "1.0"),
			want: wantInvalidSoftware,
		},
		{
			name: "software name with a space", versions: all, req: software("my client", "1.0"),
			want: wantInvalidSoftware,
		},
		{
			name: "software version ending in a dot", versions: all, req: software("kgo", "1.0."),
			want: wantInvalidSoftware,
		},
		{name: "names this cluster and node", versions: []int16{4, 5}, req: target("ours", 1), want: wantApiVersions(0)},
		{
			name: "names another cluster", versions: []int16{4, 5}, req: target("other", 1),
			want: wantApiVersionsFrom(5, kerr.RebootstrapRequired.Code),
		},
		{
			name: "names another node", versions: []int16{4, 5}, req: target("ours", 2),
			want: wantApiVersionsFrom(5, kerr.RebootstrapRequired.Code),
		},
		{
			name: "names a cluster without a node", versions: []int16{4, 5}, req: target("ours", -1),
			want: wantApiVersionsFrom(5, kerr.InvalidRequest.Code),
		},
		{
			name: "names a node without a cluster", versions: []int16{4, 5}, req: target("", 1),
			want: wantApiVersionsFrom(5, kerr.InvalidRequest.Code),
		},
	}
}

// TestUnsupportedApiVersions: a version above ours is answered (by the
// connection loop) at v0 with UNSUPPORTED_VERSION and our own ApiVersions
// range, and nothing else, as Kafka's ApiVersionsRequest.getErrorResponse
// (KIP-511), so the client retries at a version we serve.
func TestUnsupportedApiVersions(t *testing.T) {
	req := kmsg.NewPtrApiVersionsRequest() // what the client reads the answer as
	f, err := wire.EncodeResponse(7, UnsupportedApiVersions(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := decodeFrame(req, f)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*kmsg.ApiVersionsResponse)
	a, _ := Lookup(kmsg.ApiVersions.Int16())
	want := []apiRange{{kmsg.ApiVersions.Int16(), a.Min, a.Max}}
	if got := apiRanges(r.ApiKeys); r.ErrorCode != kerr.UnsupportedVersion.Code || !slices.Equal(got, want) {
		t.Errorf("error %d, keys %v; want UNSUPPORTED_VERSION, %v", r.ErrorCode, got, want)
	}
}

func apiVersionsReq() *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo", "v1.22.3"
	return req
}

// wantApiVersionsFrom checks for error code from version v on, and a
// complete answer before it.
func wantApiVersionsFrom(v, code int16) check[*kmsg.ApiVersionsResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.ApiVersionsResponse) {
		t.Helper()
		if s.version < v {
			wantApiVersions(0)(t, s, resp)
		} else {
			wantApiVersions(code)(t, s, resp)
		}
	}
}

// wantApiVersions checks the error code and, with none, that the answer
// lists exactly the registration table, by key.
func wantApiVersions(code int16) check[*kmsg.ApiVersionsResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.ApiVersionsResponse) {
		t.Helper()
		if resp.ErrorCode != code {
			t.Errorf("error %d, want %d", resp.ErrorCode, code)
		}
		if code != 0 {
			return
		}
		var want []apiRange
		for _, k := range Keys() {
			a, _ := Lookup(k)
			want = append(want, apiRange{k, a.Min, a.Max})
		}
		if got := apiRanges(resp.ApiKeys); !slices.Equal(got, want) {
			t.Errorf("keys %v, want %v", got, want)
		}
	}
}

// wantInvalidSoftware checks for INVALID_REQUEST without keys from v3 on,
// as Kafka answers a software name or version it does not accept
// (ApiVersionsRequest.isValid, getErrorResponse).
func wantInvalidSoftware(t *testing.T, s *scene, resp *kmsg.ApiVersionsResponse) {
	t.Helper()
	wantApiVersionsFrom(3, kerr.InvalidRequest.Code)(t, s, resp)
	if s.version >= 3 && len(resp.ApiKeys) != 0 {
		t.Errorf("%d keys with INVALID_REQUEST, want none", len(resp.ApiKeys))
	}
}

// apiRange is an API key with its version range.
type apiRange struct{ key, min, max int16 }

func apiRanges(keys []kmsg.ApiVersionsResponseApiKey) []apiRange {
	var out []apiRange
	for _, k := range keys {
		out = append(out, apiRange{k.ApiKey, k.MinVersion, k.MaxVersion})
	}
	return out
}
