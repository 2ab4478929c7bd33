package handler

import (
	"cmp"
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

// DescribeClientQuotas: v0-1
//
// Behavior:
//   - Needs DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
//   - Returns the stored client quotas of every entity that matches all
//     the filter's components: EXACT a given name, DEFAULT the type's
//     default entity, ANY any name of the type (the default included).
//     Strict also drops entities with a type the filter does not name.
//   - An unknown or repeated entity type, an EXACT without a name, or ip
//     together with user or client-id is INVALID_REQUEST.
//   - Entities come sorted (user, then client-id, then ip), values by key.
func handleDescribeClientQuotas(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(code int16, msg string) (Result, error) {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return Result{Resp: resp}, nil
	}
	if !env.allowedCluster(req, kmsg.ACLOperationDescribeConfigs) {
		return fail(kerr.ClusterAuthorizationFailed.Code, "not authorized to describe the cluster's client quotas")
	}
	seen := map[string]bool{}
	for _, c := range r.Components {
		switch {
		case c.EntityType != quotaUser && c.EntityType != quotaClient && c.EntityType != quotaIP:
			return fail(kerr.InvalidRequest.Code, "unknown entity type "+c.EntityType)
		case seen[c.EntityType]:
			return fail(kerr.InvalidRequest.Code, "duplicate entity type "+c.EntityType)
		case c.MatchType == kmsg.QuotasMatchTypeExact && c.Match == nil:
			return fail(kerr.InvalidRequest.Code, "an EXACT match needs a name")
		case c.MatchType > kmsg.QuotasMatchTypeAny || c.MatchType < kmsg.QuotasMatchTypeExact:
			return fail(kerr.InvalidRequest.Code, "unknown match type")
		}
		seen[c.EntityType] = true
	}
	if seen[quotaIP] && (seen[quotaUser] || seen[quotaClient]) {
		return fail(kerr.InvalidRequest.Code, "ip cannot be combined with user or client-id")
	}
	all := env.Cache.ClientQuotas()
	entities := slices.SortedFunc(maps.Keys(all), func(a, b metadata.QuotaEntity) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.ClientID, b.ClientID), cmp.Compare(a.IP, b.IP))
	})
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, e := range entities {
		if !quotaMatches(e, r.Components, r.Strict) {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		entry.Entity = quotaComponents(e)
		vals := all[e]
		for _, k := range slices.Sorted(maps.Keys(vals)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, vals[k]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return Result{Resp: resp}, nil
}

// quotaMatches reports whether entity e matches every component of a
// DescribeClientQuotas filter (and, strict, has no other type).
func quotaMatches(e metadata.QuotaEntity, comps []kmsg.DescribeClientQuotasRequestComponent, strict bool) bool {
	names := map[string]string{quotaUser: e.User, quotaClient: e.ClientID, quotaIP: e.IP}
	for _, c := range comps {
		name := names[c.EntityType]
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if name == "" || name == metadata.QuotaDefault || name != *c.Match {
				return false
			}
		case kmsg.QuotasMatchTypeDefault:
			if name != metadata.QuotaDefault {
				return false
			}
		default:
			if name == "" {
				return false
			}
		}
		delete(names, c.EntityType)
	}
	if strict {
		for _, name := range names {
			if name != "" {
				return false
			}
		}
	}
	return true
}
