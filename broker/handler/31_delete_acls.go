package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

// DeleteAcls: v0-3
//
// Behavior:
//   - Each filter (metadata.ACLFilter: ANY and MATCH pattern types, null
//     name, principal and host match any) selects stored ACLs; all that
//     any filter selects are deleted together, and each filter's result
//     lists the ones it matched.
//   - SECURITY_DISABLED for each filter when no authorizer is configured;
//     CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster;
//     INVALID_REQUEST for a filter with an UNKNOWN field.
//
// Version notes:
//   - v1 adds the pattern type (v0: LITERAL); v2 is flexible.
func handleDeleteAcls(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DeleteACLsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(r.Filters))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
	}
	setErr := func(i int, code int16, msg *string) {
		resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
	}
	admin := aclAlterAdmin(env, req, len(resp.Results), setErr)
	if admin == nil {
		return Result{Resp: resp}, nil
	}
	stored := admin.ACLs()
	seen := map[metadata.ACL]bool{}
	var doomed []metadata.ACL
	var used []int // resp.Results indexes with matches
	for i, fl := range r.Filters {
		f := aclFilter(r.Version, fl.ResourceType, fl.ResourceName, fl.ResourcePatternType, fl.Principal, fl.Host, fl.Operation, fl.PermissionType)
		if !f.Valid() {
			setErr(i, kerr.InvalidRequest.Code, strPtr("DeleteAclsRequest contains UNKNOWN elements"))
			continue
		}
		for _, a := range stored {
			if !f.Matches(a) {
				continue
			}
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
			m.Principal, m.Host = a.Principal, a.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
			if !seen[a] {
				seen[a] = true
				doomed = append(doomed, a)
			}
		}
		if len(resp.Results[i].MatchingACLs) > 0 {
			used = append(used, i)
		}
	}
	if len(doomed) == 0 {
		return Result{Resp: resp}, nil
	}
	if err := admin.DeleteACLs(ctx, doomed); err != nil {
		env.Log.Warn("deleting ACLs failed", "count", len(doomed), "err", err)
		for _, i := range used {
			setErr(i, errorCode(err), errorMessage(err))
			resp.Results[i].MatchingACLs = nil
		}
	}
	return Result{Resp: resp}, nil
}
