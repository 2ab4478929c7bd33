package etcdstore

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/strata-broker/strata/metadata"
)

// aclsDir holds the ACL bindings, one key per binding, the whole binding
// in the key (the value is "{}", room for later fields):
//
//	acls/<RESOURCE_TYPE>/<PATTERN_TYPE>/<name>/<principal>/<host>/<OPERATION>/<PERMISSION>
//
// the name, principal and host path-escaped, so none holds a '/'.
const aclsDir = "acls/"

// aclTxnOps is the most operations one ACL txn holds: etcd's default
// --max-txn-ops, so an external etcd with default limits takes them.
const aclTxnOps = 128

// acl is the key of a.
func (k keys) acl(a metadata.ACL) string {
	return k.root + aclsDir + a.ResourceType.String() + "/" + a.PatternType.String() + "/" +
		url.PathEscape(a.ResourceName) + "/" + url.PathEscape(a.Principal) + "/" + url.PathEscape(a.Host) + "/" +
		a.Operation.String() + "/" + a.Permission.String()
}

// parseACL is the inverse of acl; false for any other key, or a malformed
// or non-concrete one.
func (k keys) parseACL(key string) (metadata.ACL, bool) {
	rest, ok := strings.CutPrefix(key, k.root+aclsDir)
	if !ok {
		return metadata.ACL{}, false
	}
	f := strings.Split(rest, "/")
	if len(f) != 7 {
		return metadata.ACL{}, false
	}
	var a metadata.ACL
	var ok1, ok2, ok3, ok4 bool
	a.ResourceType, ok1 = metadata.ParseACLResourceType(f[0])
	a.PatternType, ok2 = metadata.ParseACLPatternType(f[1])
	a.Operation, ok3 = metadata.ParseACLOperation(f[5])
	a.Permission, ok4 = metadata.ParseACLPermission(f[6])
	var err1, err2, err3 error
	a.ResourceName, err1 = url.PathUnescape(f[2])
	a.Principal, err2 = url.PathUnescape(f[3])
	a.Host, err3 = url.PathUnescape(f[4])
	if !ok1 || !ok2 || !ok3 || !ok4 || err1 != nil || err2 != nil || err3 != nil || !a.Concrete() {
		return metadata.ACL{}, false
	}
	return a, true
}

// CreateACLs puts one key per ACL, in txns of at most aclTxnOps puts.
func (s *Store) CreateACLs(ctx context.Context, acls []metadata.ACL) (int64, error) {
	op := fmt.Sprintf("create %d ACLs", len(acls))
	for _, a := range acls {
		if !a.Concrete() {
			return 0, fmt.Errorf("etcdstore: %s: %+v: %w", op, a, metadata.ErrInvalidACL)
		}
	}
	return s.aclTxns(ctx, op, acls, func(key string) clientv3.Op { return clientv3.OpPut(key, "{}") })
}

// DeleteACLs deletes one key per ACL, in txns of at most aclTxnOps
// deletes; missing keys are no-ops.
func (s *Store) DeleteACLs(ctx context.Context, acls []metadata.ACL) (int64, error) {
	op := fmt.Sprintf("delete %d ACLs", len(acls))
	return s.aclTxns(ctx, op, acls, func(key string) clientv3.Op { return clientv3.OpDelete(key) })
}

// aclTxns commits one op per ACL in chunks of aclTxnOps, each one txn,
// and waits for the cache to apply the last.
func (s *Store) aclTxns(ctx context.Context, op string, acls []metadata.ACL, mk func(key string) clientv3.Op) (int64, error) {
	if err := s.checkOpen(op); err != nil {
		return 0, err
	}
	// etcd refuses a txn naming one key twice.
	seen := make(map[metadata.ACL]bool, len(acls))
	acls = slices.DeleteFunc(slices.Clone(acls), func(a metadata.ACL) bool {
		dup := seen[a]
		seen[a] = true
		return dup
	})
	if len(acls) == 0 {
		return s.cache.Revision(), nil
	}
	var rev int64
	for chunk := range slices.Chunk(acls, aclTxnOps) {
		ops := make([]clientv3.Op, len(chunk))
		for i, a := range chunk {
			ops[i] = mk(s.keys.acl(a))
		}
		resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
		if err != nil {
			return 0, writeErr(op, err)
		}
		rev = resp.Header.Revision
	}
	return s.visible(ctx, op, rev)
}
