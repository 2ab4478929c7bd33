package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

// CreateAcls: v0-3
//
// Behavior:
//   - Stores each creation (an ACL already stored stays as it is) through
//     the authorizer, which enforces them on this broker when it answers;
//     other brokers follow through the metadata watch.
//   - SECURITY_DISABLED for each creation when no authorizer is
//     configured; CLUSTER_AUTHORIZATION_FAILED without ALTER on the
//     cluster; INVALID_REQUEST for a creation Kafka refuses (UNKNOWN, ANY
//     or MATCH fields, an empty resource name, a CLUSTER resource not
//     named kafka-cluster, a principal without a type).
//
// Version notes:
//   - v1 adds the pattern type (v0: LITERAL); v2 is flexible.
func handleCreateAcls(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.CreateACLsRequest)
	resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(r.Creations))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
	}
	setErr := func(i int, code int16, msg *string) {
		resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
	}
	admin := aclAlterAdmin(env, req, len(resp.Results), setErr)
	if admin == nil {
		return Result{Resp: resp}, nil
	}
	var acls []metadata.ACL
	var idx []int // resp.Results index of each of acls
	for i, c := range r.Creations {
		pattern := c.ResourcePatternType
		if r.Version == 0 {
			pattern = kmsg.ACLResourcePatternTypeLiteral
		}
		a := metadata.ACL{
			ResourceType: metadata.ACLResourceType(c.ResourceType), ResourceName: c.ResourceName, PatternType: metadata.ACLPatternType(pattern),
			Principal: c.Principal, Host: c.Host, Operation: metadata.ACLOperation(c.Operation), Permission: metadata.ACLPermission(c.PermissionType),
		}
		if why := validACL(a); why != "" {
			setErr(i, kerr.InvalidRequest.Code, strPtr(why))
			continue
		}
		acls, idx = append(acls, a), append(idx, i)
	}
	if len(acls) == 0 {
		return Result{Resp: resp}, nil
	}
	if err := admin.CreateACLs(ctx, acls); err != nil {
		env.Log.Warn("creating ACLs failed", "count", len(acls), "err", err)
		for _, i := range idx {
			setErr(i, errorCode(err), errorMessage(err))
		}
	}
	return Result{Resp: resp}, nil
}

// aclAlterAdmin returns the ACLAdmin a CreateAcls or DeleteAcls request
// works through, or nil after failing each of its n results with
// setErr: SECURITY_DISABLED without an authorizer that keeps ACLs,
// CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster.
func aclAlterAdmin(env *Env, req *Request, n int, setErr func(i int, code int16, msg *string)) ACLAdmin {
	admin, msg := aclAdmin(env)
	var code int16
	switch {
	case admin == nil:
		code = kerr.SecurityDisabled.Code
	case !env.allowedCluster(req, kmsg.ACLOperationAlter):
		code, msg = kerr.ClusterAuthorizationFailed.Code, nil
	default:
		return admin
	}
	for i := range n {
		setErr(i, code, msg)
	}
	return nil
}
