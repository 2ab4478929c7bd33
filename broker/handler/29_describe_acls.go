package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

// DescribeAcls: v0-3
//
// Behavior:
//   - Lists the ACL bindings the filter selects (metadata.ACLFilter: ANY
//     and MATCH pattern types, null name, principal and host match any),
//     grouped by resource pattern, in resource order.
//   - SECURITY_DISABLED when no authorizer is configured;
//     CLUSTER_AUTHORIZATION_FAILED without DESCRIBE on the cluster;
//     INVALID_REQUEST for a filter with an UNKNOWN field.
//
// Version notes:
//   - v1 adds the pattern type (v0: LITERAL); v2 is flexible.
func handleDescribeAcls(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	admin, msg := aclAdmin(env)
	switch {
	case admin == nil:
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, msg
		return Result{Resp: resp}, nil
	case !env.allowedCluster(req, kmsg.ACLOperationDescribe):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return Result{Resp: resp}, nil
	}
	f := aclFilter(r.Version, r.ResourceType, r.ResourceName, r.ResourcePatternType, r.Principal, r.Host, r.Operation, r.PermissionType)
	if !f.Valid() {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, strPtr("DescribeAclsRequest contains UNKNOWN elements")
		return Result{Resp: resp}, nil
	}
	// ACLs come sorted by resource first, so each resource's bindings are
	// adjacent.
	for _, a := range admin.ACLs() {
		if !f.Matches(a) {
			continue
		}
		if n := len(resp.Resources); n == 0 || !sameResource(resp.Resources[n-1], a) {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName = kmsg.ACLResourceType(a.ResourceType), a.ResourceName
			res.ResourcePatternType = kmsg.ACLResourcePatternType(a.PatternType)
			resp.Resources = append(resp.Resources, res)
		}
		res := &resp.Resources[len(resp.Resources)-1]
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host = a.Principal, a.Host
		e.Operation, e.PermissionType = kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		res.ACLs = append(res.ACLs, e)
	}
	return Result{Resp: resp}, nil
}

// sameResource reports whether a binds res's resource pattern.
func sameResource(res kmsg.DescribeACLsResponseResource, a metadata.ACL) bool {
	return res.ResourceType == kmsg.ACLResourceType(a.ResourceType) && res.ResourceName == a.ResourceName &&
		res.ResourcePatternType == kmsg.ACLResourcePatternType(a.PatternType)
}
