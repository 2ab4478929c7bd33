package metadata

import (
	"cmp"
	"errors"
	"strings"
)

// ErrInvalidACL: an ACL to store has an UNKNOWN or filter-only field, or
// an empty resource name.
var ErrInvalidACL = errors.New("metadata: invalid ACL")

// ACL codes are Kafka's wire codes (kmsg.ACLResourceType,
// kmsg.ACLResourcePatternType, kmsg.ACLOperation, kmsg.ACLPermissionType),
// so the broker converts with a plain int8 conversion; this package stays
// free of kmsg.

// ACLResourceType is the type of the resource an ACL guards.
type ACLResourceType int8

// Resource types (Kafka's ResourceType codes).
const (
	ACLResourceUnknown         ACLResourceType = 0
	ACLResourceAny             ACLResourceType = 1 // filters only
	ACLResourceTopic           ACLResourceType = 2
	ACLResourceGroup           ACLResourceType = 3
	ACLResourceCluster         ACLResourceType = 4
	ACLResourceTransactionalID ACLResourceType = 5
	ACLResourceDelegationToken ACLResourceType = 6
	ACLResourceUser            ACLResourceType = 7
)

// ACLPatternType says how an ACL's resource name matches resources.
type ACLPatternType int8

// Pattern types (Kafka's PatternType codes). ANY and MATCH appear in
// filters only.
const (
	ACLPatternUnknown  ACLPatternType = 0
	ACLPatternAny      ACLPatternType = 1
	ACLPatternMatch    ACLPatternType = 2
	ACLPatternLiteral  ACLPatternType = 3
	ACLPatternPrefixed ACLPatternType = 4
)

// ACLOperation is the operation an ACL allows or denies.
type ACLOperation int8

// Operations (Kafka's AclOperation codes). ANY appears in filters only.
const (
	ACLOpUnknown         ACLOperation = 0
	ACLOpAny             ACLOperation = 1
	ACLOpAll             ACLOperation = 2
	ACLOpRead            ACLOperation = 3
	ACLOpWrite           ACLOperation = 4
	ACLOpCreate          ACLOperation = 5
	ACLOpDelete          ACLOperation = 6
	ACLOpAlter           ACLOperation = 7
	ACLOpDescribe        ACLOperation = 8
	ACLOpClusterAction   ACLOperation = 9
	ACLOpDescribeConfigs ACLOperation = 10
	ACLOpAlterConfigs    ACLOperation = 11
	ACLOpIdempotentWrite ACLOperation = 12
	ACLOpCreateTokens    ACLOperation = 13
	ACLOpDescribeTokens  ACLOperation = 14
)

// ACLPermission says whether an ACL allows or denies.
type ACLPermission int8

// Permission types (Kafka's AclPermissionType codes). ANY appears in
// filters only.
const (
	ACLPermissionUnknown ACLPermission = 0
	ACLPermissionAny     ACLPermission = 1
	ACLDeny              ACLPermission = 2
	ACLAllow             ACLPermission = 3
)

// ACLWildcard is the resource name ("*", LITERAL) matching every resource
// of its type, and the host matching every host.
const ACLWildcard = "*"

// ACLWildcardPrincipal is the principal matching every principal.
const ACLWildcardPrincipal = "User:*"

// ACL is one access-control binding (Kafka's AclBinding): a resource
// pattern and an entry saying who may (or may not) do what from where.
// It is comparable; the store keeps each distinct ACL once.
type ACL struct {
	ResourceType ACLResourceType
	ResourceName string
	PatternType  ACLPatternType // LITERAL or PREFIXED
	Principal    string         // "User:alice", or ACLWildcardPrincipal
	Host         string         // an IP address, or ACLWildcard
	Operation    ACLOperation
	Permission   ACLPermission // ACLAllow or ACLDeny
}

// Concrete reports whether a has no UNKNOWN or filter-only (ANY, MATCH)
// field and names its resource and principal: whether it can be stored.
func (a ACL) Concrete() bool {
	return a.ResourceName != "" && a.Principal != "" && a.Host != "" &&
		a.ResourceType > ACLResourceAny && a.ResourceType <= ACLResourceUser &&
		(a.PatternType == ACLPatternLiteral || a.PatternType == ACLPatternPrefixed) &&
		a.Operation > ACLOpAny && a.Operation <= ACLOpDescribeTokens &&
		(a.Permission == ACLAllow || a.Permission == ACLDeny)
}

// CompareACLs orders ACLs by resource (type, pattern type, name), then
// principal, host, operation and permission: the order of Cache.ACLs.
func CompareACLs(a, b ACL) int {
	return cmp.Or(
		cmp.Compare(a.ResourceType, b.ResourceType),
		cmp.Compare(a.PatternType, b.PatternType),
		strings.Compare(a.ResourceName, b.ResourceName),
		strings.Compare(a.Principal, b.Principal),
		strings.Compare(a.Host, b.Host),
		cmp.Compare(a.Operation, b.Operation),
		cmp.Compare(a.Permission, b.Permission),
	)
}

// ACLFilter selects ACLs (Kafka's AclBindingFilter), for DescribeAcls and
// DeleteAcls. A nil name, principal or host matches any.
type ACLFilter struct {
	ResourceType ACLResourceType // ACLResourceAny: any
	ResourceName *string
	// PatternType: ANY matches both pattern types (by name equality);
	// MATCH matches the ACLs that apply to the named resource (literal
	// with that name or "*", prefixed with a prefix of it); LITERAL and
	// PREFIXED match ACLs of that pattern type by name equality.
	PatternType ACLPatternType
	Principal   *string
	Host        *string
	Operation   ACLOperation  // ACLOpAny: any
	Permission  ACLPermission // ACLPermissionAny: any
}

// Valid reports whether f has no UNKNOWN field (Kafka refuses such
// filters with INVALID_REQUEST).
func (f ACLFilter) Valid() bool {
	return f.ResourceType > ACLResourceUnknown && f.ResourceType <= ACLResourceUser &&
		f.PatternType > ACLPatternUnknown && f.PatternType <= ACLPatternPrefixed &&
		f.Operation > ACLOpUnknown && f.Operation <= ACLOpDescribeTokens &&
		f.Permission > ACLPermissionUnknown && f.Permission <= ACLAllow
}

// Matches reports whether a is selected by f, with Kafka's
// AclBindingFilter.matches semantics.
func (f ACLFilter) Matches(a ACL) bool {
	if f.ResourceType != ACLResourceAny && f.ResourceType != a.ResourceType {
		return false
	}
	if f.PatternType != ACLPatternAny && f.PatternType != ACLPatternMatch && f.PatternType != a.PatternType {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		switch {
		case f.PatternType != ACLPatternMatch:
			if name != a.ResourceName {
				return false
			}
		case a.PatternType == ACLPatternLiteral:
			if name != a.ResourceName && a.ResourceName != ACLWildcard {
				return false
			}
		case a.PatternType == ACLPatternPrefixed:
			if !strings.HasPrefix(name, a.ResourceName) {
				return false
			}
		default:
			return false
		}
	}
	if f.Principal != nil && *f.Principal != a.Principal {
		return false
	}
	if f.Host != nil && *f.Host != a.Host {
		return false
	}
	if f.Operation != ACLOpAny && f.Operation != a.Operation {
		return false
	}
	return f.Permission == ACLPermissionAny || f.Permission == a.Permission
}

// Names of the codes, as Kafka spells them; the etcd key layout uses them.
var (
	aclResourceNames   = [...]string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}
	aclPatternNames    = [...]string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}
	aclOperationNames  = [...]string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS"}
	aclPermissionNames = [...]string{"UNKNOWN", "ANY", "DENY", "ALLOW"}
)

func codeName(names []string, c int8) string {
	if c < 0 || int(c) >= len(names) {
		return "UNKNOWN"
	}
	return names[c]
}

func parseCode(names []string, s string) (int8, bool) {
	for i, n := range names {
		if n == s && i > 0 {
			return int8(i), true
		}
	}
	return 0, false
}

// String is Kafka's name of t ("TOPIC").
func (t ACLResourceType) String() string { return codeName(aclResourceNames[:], int8(t)) }

// String is Kafka's name of p ("LITERAL").
func (p ACLPatternType) String() string { return codeName(aclPatternNames[:], int8(p)) }

// String is Kafka's name of o ("READ").
func (o ACLOperation) String() string { return codeName(aclOperationNames[:], int8(o)) }

// String is Kafka's name of p ("ALLOW").
func (p ACLPermission) String() string { return codeName(aclPermissionNames[:], int8(p)) }

// ParseACLResourceType is the inverse of ACLResourceType.String (false
// for UNKNOWN or an unknown name).
func ParseACLResourceType(s string) (ACLResourceType, bool) {
	c, ok := parseCode(aclResourceNames[:], s)
	return ACLResourceType(c), ok
}

// ParseACLPatternType is the inverse of ACLPatternType.String.
func ParseACLPatternType(s string) (ACLPatternType, bool) {
	c, ok := parseCode(aclPatternNames[:], s)
	return ACLPatternType(c), ok
}

// ParseACLOperation is the inverse of ACLOperation.String.
func ParseACLOperation(s string) (ACLOperation, bool) {
	c, ok := parseCode(aclOperationNames[:], s)
	return ACLOperation(c), ok
}

// ParseACLPermission is the inverse of ACLPermission.String.
func ParseACLPermission(s string) (ACLPermission, bool) {
	c, ok := parseCode(aclPermissionNames[:], s)
	return ACLPermission(c), ok
}
