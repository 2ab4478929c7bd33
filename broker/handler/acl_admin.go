package handler

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

// ACLAdmin is what an Authorizer that keeps ACLs offers besides
// Authorize, as Kafka's Authorizer has createAcls, deleteAcls and acls:
// CreateAcls, DeleteAcls and DescribeAcls work through it, and answer
// SECURITY_DISABLED when Env.Authorizer is nil or does not implement it.
type ACLAdmin interface {
	// ACLs returns every stored ACL binding in metadata.CompareACLs
	// order; the slice is shared, not to be modified.
	ACLs() []metadata.ACL
	// CreateACLs stores acls (each concrete); existing ones stay. When it
	// returns, this broker enforces them.
	CreateACLs(ctx context.Context, acls []metadata.ACL) error
	// DeleteACLs removes acls; missing ones are ignored. When it returns,
	// this broker no longer enforces them.
	DeleteACLs(ctx context.Context, acls []metadata.ACL) error
}

// clusterResource is the name of the one CLUSTER resource.
const clusterResource = "kafka-cluster"

// aclAdmin returns the authorizer's ACLAdmin, or a SECURITY_DISABLED
// message when there is none (Kafka: "No Authorizer is configured").
func aclAdmin(env *Env) (ACLAdmin, *string) {
	if admin, ok := env.Authorizer.(ACLAdmin); ok {
		return admin, nil
	}
	return nil, strPtr("No Authorizer is configured on the broker")
}

// aclFilter converts a DescribeAcls or DeleteAcls filter; version 0
// requests have no pattern type and mean LITERAL.
func aclFilter(version int16, typ kmsg.ACLResourceType, name *string, pattern kmsg.ACLResourcePatternType,
	principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) metadata.ACLFilter {
	if version == 0 {
		pattern = kmsg.ACLResourcePatternTypeLiteral
	}
	return metadata.ACLFilter{
		ResourceType: metadata.ACLResourceType(typ), ResourceName: name, PatternType: metadata.ACLPatternType(pattern),
		Principal: principal, Host: host, Operation: metadata.ACLOperation(op), Permission: metadata.ACLPermission(perm),
	}
}

// validACL says why a is not an ACL Kafka would create, "" when it is
// (Kafka's AclControlManager.validateNewAcl and AclApis checks).
func validACL(a metadata.ACL) string {
	switch {
	case a.ResourceType <= metadata.ACLResourceAny || a.ResourceType > metadata.ACLResourceUser:
		return "Invalid resourceType " + a.ResourceType.String()
	case a.PatternType != metadata.ACLPatternLiteral && a.PatternType != metadata.ACLPatternPrefixed:
		return "Invalid patternType " + a.PatternType.String()
	case a.Operation <= metadata.ACLOpAny || a.Operation > metadata.ACLOpDescribeTokens:
		return "Invalid operation " + a.Operation.String()
	case a.Permission != metadata.ACLAllow && a.Permission != metadata.ACLDeny:
		return "Invalid permissionType " + a.Permission.String()
	case a.ResourceName == "":
		return "Resource name should not be empty"
	case a.ResourceType == metadata.ACLResourceCluster && a.ResourceName != clusterResource:
		return "The only valid name for the CLUSTER resource is " + clusterResource
	case !validPrincipal(a.Principal):
		return "Could not parse principal from `" + a.Principal + "` (no colon is present separating the principal type from the principal name)"
	case a.Host == "":
		return "Host should not be empty"
	}
	return ""
}

// validPrincipal: TYPE:name, both non-empty.
func validPrincipal(p string) bool {
	i := strings.IndexByte(p, ':')
	return i > 0 && i < len(p)-1
}
