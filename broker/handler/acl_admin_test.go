package handler

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/memstore"
)

// aclAdminStore is the ACL side of an authorizer over a memstore (the real
// one, broker/acl, imports this package): it keeps ACLs in the store and
// allows every principal but "User:denied". broker/acl has the
// authorizer's own tests; these are the APIs'.
type aclAdminStore struct{ store *memstore.Store }

func (a aclAdminStore) Authorize(act Action) bool { return act.Principal != "User:denied" }
func (a aclAdminStore) ACLs() []metadata.ACL {
	acls, _ := a.store.Cache().ACLs()
	return acls
}
func (a aclAdminStore) CreateACLs(ctx context.Context, acls []metadata.ACL) error {
	_, err := a.store.CreateACLs(ctx, acls)
	return err
}
func (a aclAdminStore) DeleteACLs(ctx context.Context, acls []metadata.ACL) error {
	_, err := a.store.DeleteACLs(ctx, acls)
	return err
}

// aclAdminWith installs the aclAdminStore authorizer and a connection of
// principal, then stores acls.
func aclAdminWith(principal string, acls ...metadata.ACL) step {
	return func(t *testing.T, s *scene) {
		s.env.Authorizer = aclAdminStore{s.store}
		s.conn = &Conn{Principal: principal, Host: netip.MustParseAddr("127.0.0.1")}
		if len(acls) > 0 {
			if _, err := s.store.CreateACLs(t.Context(), acls); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func aclAdminACL(typ metadata.ACLResourceType, pat metadata.ACLPatternType, name, principal string, op metadata.ACLOperation, perm metadata.ACLPermission) metadata.ACL {
	return metadata.ACL{ResourceType: typ, ResourceName: name, PatternType: pat, Principal: principal, Host: "*", Operation: op, Permission: perm}
}

var (
	aclAdminOrders = aclAdminACL(metadata.ACLResourceTopic, metadata.ACLPatternLiteral, "orders", "User:alice", metadata.ACLOpRead, metadata.ACLAllow)
	aclAdminStar   = aclAdminACL(metadata.ACLResourceTopic, metadata.ACLPatternLiteral, "*", "User:bob", metadata.ACLOpDescribe, metadata.ACLAllow)
	aclAdminOrd    = aclAdminACL(metadata.ACLResourceTopic, metadata.ACLPatternPrefixed, "ord", "User:alice", metadata.ACLOpWrite, metadata.ACLDeny)
	aclAdminGroup  = aclAdminACL(metadata.ACLResourceGroup, metadata.ACLPatternLiteral, "orders", "User:alice", metadata.ACLOpRead, metadata.ACLAllow)
)

// aclAdminDescribed flattens a DescribeAcls answer.
func aclAdminDescribed(resp *kmsg.DescribeACLsResponse) []metadata.ACL {
	var out []metadata.ACL
	for _, r := range resp.Resources {
		for _, e := range r.ACLs {
			out = append(out, metadata.ACL{ResourceType: metadata.ACLResourceType(r.ResourceType), ResourceName: r.ResourceName,
				PatternType: metadata.ACLPatternType(r.ResourcePatternType), Principal: e.Principal, Host: e.Host,
				Operation: metadata.ACLOperation(e.Operation), Permission: metadata.ACLPermission(e.PermissionType)})
		}
	}
	return out
}

func aclAdminDescribeReq(typ kmsg.ACLResourceType, name *string, pat kmsg.ACLResourcePatternType, principal *string) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		r := kmsg.NewPtrDescribeACLsRequest()
		r.ResourceType, r.ResourceName, r.ResourcePatternType, r.Principal = typ, name, pat, principal
		r.Operation, r.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return r
	}
}

func aclAdminWantDescribed(code int16, want ...metadata.ACL) check[*kmsg.DescribeACLsResponse] {
	return func(t *testing.T, _ *scene, resp *kmsg.DescribeACLsResponse) {
		t.Helper()
		if resp.ErrorCode != code {
			t.Fatalf("error %v (%v), want %v", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage, kerr.ErrorForCode(code))
		}
		if got := aclAdminDescribed(resp); !slices.Equal(got, want) {
			t.Errorf("described %+v\nwant %+v", got, want)
		}
	}
}

func TestDescribeAcls(t *testing.T) {
	runRows(t, tableOpts{}, describeAclsRows())
}

func describeAclsRows() []apiRow[*kmsg.DescribeACLsResponse] {
	all := []metadata.ACL{aclAdminOrders, aclAdminStar, aclAdminOrd, aclAdminGroup}
	stored := aclAdminWith("User:admin", all...)
	anyTopic := kmsg.ACLResourceTypeTopic
	return []apiRow[*kmsg.DescribeACLsResponse]{
		{name: "no authorizer", req: aclAdminDescribeReq(kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, nil),
			want: aclAdminWantDescribed(kerr.SecurityDisabled.Code)},
		{name: "not allowed", setup: aclAdminWith("User:denied", all...), req: aclAdminDescribeReq(kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, nil),
			want: aclAdminWantDescribed(kerr.ClusterAuthorizationFailed.Code)},
		{name: "ANY lists all in resource order", since: 1, setup: stored, req: aclAdminDescribeReq(kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, nil),
			want: aclAdminWantDescribed(0, aclAdminStar, aclAdminOrders, aclAdminOrd, aclAdminGroup)},
		{name: "v0 means LITERAL", versions: []int16{0}, setup: stored, req: aclAdminDescribeReq(kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, nil),
			want: aclAdminWantDescribed(0, aclAdminStar, aclAdminOrders, aclAdminGroup)},
		{name: "MATCH: what applies to a topic", since: 1, setup: stored, req: aclAdminDescribeReq(anyTopic, kmsg.StringPtr("orders"), kmsg.ACLResourcePatternTypeMatch, nil),
			want: aclAdminWantDescribed(0, aclAdminStar, aclAdminOrders, aclAdminOrd)},
		{name: "MATCH: prefix does not apply to a shorter name", since: 1, setup: stored, req: aclAdminDescribeReq(anyTopic, kmsg.StringPtr("or"), kmsg.ACLResourcePatternTypeMatch, nil),
			want: aclAdminWantDescribed(0, aclAdminStar)},
		{name: "LITERAL name is exact", since: 1, setup: stored, req: aclAdminDescribeReq(anyTopic, kmsg.StringPtr("orders"), kmsg.ACLResourcePatternTypeLiteral, nil),
			want: aclAdminWantDescribed(0, aclAdminOrders)},
		{name: "PREFIXED", since: 1, setup: stored, req: aclAdminDescribeReq(kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypePrefixed, nil),
			want: aclAdminWantDescribed(0, aclAdminOrd)},
		{name: "by principal", since: 1, setup: stored, req: aclAdminDescribeReq(kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeAny, kmsg.StringPtr("User:bob")),
			want: aclAdminWantDescribed(0, aclAdminStar)},
		{name: "UNKNOWN pattern type", since: 1, setup: stored, req: aclAdminDescribeReq(kmsg.ACLResourceTypeAny, nil, kmsg.ACLResourcePatternTypeUnknown, nil),
			want: aclAdminWantDescribed(kerr.InvalidRequest.Code)},
	}
}

// creation builds a CreateAcls creation of a.
func aclAdminCreation(a metadata.ACL) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
	c.Principal, c.Host, c.Operation, c.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
	return c
}

func aclAdminCreateReq(acls ...metadata.ACL) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		r := kmsg.NewPtrCreateACLsRequest()
		for _, a := range acls {
			r.Creations = append(r.Creations, aclAdminCreation(a))
		}
		return r
	}
}

// aclAdminWantStored checks the store's ACLs.
func aclAdminWantStored(want ...metadata.ACL) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		t.Helper()
		got, _ := s.store.Cache().ACLs()
		want = slices.SortedFunc(slices.Values(want), metadata.CompareACLs)
		if !slices.Equal(got, want) && len(got)+len(want) > 0 {
			t.Errorf("stored %+v\nwant %+v", got, want)
		}
	}
}

func TestCreateAcls(t *testing.T) {
	runRows(t, tableOpts{codes: errorCodes}, createAclsRows())
}

func createAclsRows() []apiRow[*kmsg.CreateACLsResponse] {
	stored := func(acls ...metadata.ACL) check[*kmsg.CreateACLsResponse] {
		return func(t *testing.T, s *scene, _ *kmsg.CreateACLsResponse) { aclAdminWantStored(acls...)(t, s) }
	}
	bad := func(f func(*metadata.ACL)) metadata.ACL {
		a := aclAdminOrders
		f(&a)
		return a
	}
	bads := []metadata.ACL{
		bad(func(a *metadata.ACL) { a.PatternType = metadata.ACLPatternMatch }),
		bad(func(a *metadata.ACL) { a.PatternType = metadata.ACLPatternAny }),
		bad(func(a *metadata.ACL) { a.Operation = metadata.ACLOpAny }),
		bad(func(a *metadata.ACL) { a.Permission = metadata.ACLPermissionAny }),
		bad(func(a *metadata.ACL) { a.ResourceType = metadata.ACLResourceAny }),
		bad(func(a *metadata.ACL) { a.ResourceName = "" }),
		bad(func(a *metadata.ACL) { a.ResourceType, a.ResourceName = metadata.ACLResourceCluster, "other" }),
		bad(func(a *metadata.ACL) { a.Principal = "alice" }),
	}
	cluster := aclAdminACL(metadata.ACLResourceCluster, metadata.ACLPatternLiteral, "kafka-cluster", "User:ops", metadata.ACLOpAlter, metadata.ACLAllow)
	ii := kerr.InvalidRequest.Code
	return []apiRow[*kmsg.CreateACLsResponse]{
		{name: "no authorizer", req: aclAdminCreateReq(aclAdminOrders, aclAdminStar), codes: []int16{kerr.SecurityDisabled.Code, kerr.SecurityDisabled.Code}, want: stored()},
		{name: "not allowed", setup: aclAdminWith("User:denied"), req: aclAdminCreateReq(aclAdminOrders), codes: []int16{kerr.ClusterAuthorizationFailed.Code}, want: stored()},
		{name: "literal", setup: aclAdminWith("User:admin"), req: aclAdminCreateReq(aclAdminOrders, aclAdminStar, cluster, aclAdminOrders), codes: []int16{0, 0, 0, 0}, want: stored(aclAdminOrders, aclAdminStar, cluster)},
		{name: "prefixed", since: 1, setup: aclAdminWith("User:admin"), req: aclAdminCreateReq(aclAdminOrd), codes: []int16{0}, want: stored(aclAdminOrd)},
		{name: "v0 means LITERAL", versions: []int16{0}, setup: aclAdminWith("User:admin"), req: aclAdminCreateReq(aclAdminOrd), codes: []int16{0},
			want: stored(aclAdminACL(metadata.ACLResourceTopic, metadata.ACLPatternLiteral, "ord", "User:alice", metadata.ACLOpWrite, metadata.ACLDeny))},
		{name: "invalid ones refused, valid ones stored", since: 1, setup: aclAdminWith("User:admin"), req: aclAdminCreateReq(append(bads, aclAdminGroup)...),
			codes: []int16{ii, ii, ii, ii, ii, ii, ii, ii, 0}, want: stored(aclAdminGroup)},
	}
}

func aclAdminDeleteReq(filters ...kmsg.DeleteACLsRequestFilter) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		r := kmsg.NewPtrDeleteACLsRequest()
		r.Filters = filters
		return r
	}
}

func aclAdminDeleteFilter(typ kmsg.ACLResourceType, name *string, pat kmsg.ACLResourcePatternType, op kmsg.ACLOperation) kmsg.DeleteACLsRequestFilter {
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourceName, f.ResourcePatternType = typ, name, pat
	f.Operation, f.PermissionType = op, kmsg.ACLPermissionTypeAny
	return f
}

func TestDeleteAcls(t *testing.T) {
	runRows(t, tableOpts{}, deleteAclsRows())
}

func deleteAclsRows() []apiRow[*kmsg.DeleteACLsResponse] {
	all := []metadata.ACL{aclAdminOrders, aclAdminStar, aclAdminOrd, aclAdminGroup}
	stored := aclAdminWith("User:admin", all...)
	// matched checks each filter's code and matching ACLs, and what is
	// left stored.
	matched := func(codes []int16, matches [][]metadata.ACL, left ...metadata.ACL) check[*kmsg.DeleteACLsResponse] {
		return func(t *testing.T, s *scene, resp *kmsg.DeleteACLsResponse) {
			t.Helper()
			if len(resp.Results) != len(codes) {
				t.Fatalf("%d results, want %d", len(resp.Results), len(codes))
			}
			for i, r := range resp.Results {
				var got []metadata.ACL
				for _, m := range r.MatchingACLs {
					got = append(got, metadata.ACL{ResourceType: metadata.ACLResourceType(m.ResourceType), ResourceName: m.ResourceName,
						PatternType: metadata.ACLPatternType(m.ResourcePatternType), Principal: m.Principal, Host: m.Host,
						Operation: metadata.ACLOperation(m.Operation), Permission: metadata.ACLPermission(m.PermissionType)})
				}
				if r.ErrorCode != codes[i] || !slices.Equal(got, matches[i]) {
					t.Errorf("filter %d: %v, matched %+v; want %v, %+v", i, kerr.ErrorForCode(r.ErrorCode), got, kerr.ErrorForCode(codes[i]), matches[i])
				}
			}
			aclAdminWantStored(left...)(t, s)
		}
	}
	topic, anyType := kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeAny
	anyOp := kmsg.ACLOperationAny
	return []apiRow[*kmsg.DeleteACLsResponse]{
		{name: "no authorizer", req: aclAdminDeleteReq(aclAdminDeleteFilter(anyType, nil, kmsg.ACLResourcePatternTypeAny, anyOp)),
			want: matched([]int16{kerr.SecurityDisabled.Code}, [][]metadata.ACL{nil})},
		{name: "not allowed", setup: aclAdminWith("User:denied", all...), req: aclAdminDeleteReq(aclAdminDeleteFilter(anyType, nil, kmsg.ACLResourcePatternTypeAny, anyOp)),
			want: matched([]int16{kerr.ClusterAuthorizationFailed.Code}, [][]metadata.ACL{nil}, all...)},
		{name: "MATCH and LITERAL, overlapping", since: 1, setup: stored,
			req: aclAdminDeleteReq(
				aclAdminDeleteFilter(topic, kmsg.StringPtr("orders"), kmsg.ACLResourcePatternTypeMatch, anyOp),
				aclAdminDeleteFilter(topic, kmsg.StringPtr("orders"), kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead),
				aclAdminDeleteFilter(anyType, nil, kmsg.ACLResourcePatternTypeUnknown, anyOp),
			),
			want: matched([]int16{0, 0, kerr.InvalidRequest.Code}, [][]metadata.ACL{{aclAdminStar, aclAdminOrders, aclAdminOrd}, {aclAdminOrders}, nil}, aclAdminGroup)},
		{name: "v0 means LITERAL", versions: []int16{0}, setup: stored,
			req:  aclAdminDeleteReq(aclAdminDeleteFilter(anyType, nil, kmsg.ACLResourcePatternTypeAny, anyOp)),
			want: matched([]int16{0}, [][]metadata.ACL{{aclAdminStar, aclAdminOrders, aclAdminGroup}}, aclAdminOrd)},
		{name: "ANY of an operation", since: 1, setup: stored,
			req:  aclAdminDeleteReq(aclAdminDeleteFilter(anyType, nil, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationWrite)),
			want: matched([]int16{0}, [][]metadata.ACL{{aclAdminOrd}}, aclAdminOrders, aclAdminStar, aclAdminGroup)},
		{name: "no match", since: 1, setup: stored,
			req:  aclAdminDeleteReq(aclAdminDeleteFilter(kmsg.ACLResourceTypeCluster, nil, kmsg.ACLResourcePatternTypeAny, anyOp)),
			want: matched([]int16{0}, [][]metadata.ACL{nil}, all...)},
	}
}
