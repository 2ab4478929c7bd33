package acl

import (
	"context"
	"net/netip"
	"testing"
	"testing/synctest"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/memstore"
)

// newAuth returns an authorizer over a fresh memstore holding acls.
func newAuth(t testing.TB, cfg Config, acls ...metadata.ACL) *Authorizer {
	t.Helper()
	s := memstore.New()
	t.Cleanup(func() { _ = s.Close() })
	a := New(cfg, s.Cache(), s, nil)
	if len(acls) > 0 {
		if err := a.CreateACLs(t.Context(), acls); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

func allow(typ metadata.ACLResourceType, pat metadata.ACLPatternType, name, principal, host string, op metadata.ACLOperation) metadata.ACL {
	return metadata.ACL{ResourceType: typ, ResourceName: name, PatternType: pat, Principal: principal, Host: host, Operation: op, Permission: metadata.ACLAllow}
}

func deny(typ metadata.ACLResourceType, pat metadata.ACLPatternType, name, principal, host string, op metadata.ACLOperation) metadata.ACL {
	a := allow(typ, pat, name, principal, host, op)
	a.Permission = metadata.ACLDeny
	return a
}

const (
	topic = metadata.ACLResourceTopic
	group = metadata.ACLResourceGroup
	lit   = metadata.ACLPatternLiteral
	pre   = metadata.ACLPatternPrefixed
)

var local = netip.MustParseAddr("127.0.0.1")

func act(principal string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) handler.Action {
	return handler.Action{Principal: principal, Host: local, Op: op, Type: typ, Name: name}
}

// TestAuthorizeSemantics walks Kafka's StandardAuthorizer rules one case
// each.
func TestAuthorizeSemantics(t *testing.T) {
	a := newAuth(t, Config{SuperUsers: []string{"User:admin", " User:root "}},
		allow(topic, lit, "orders", "User:alice", "*", metadata.ACLOpRead),
		allow(topic, pre, "pay-", "User:alice", "*", metadata.ACLOpWrite),
		deny(topic, lit, "pay-secret", "User:alice", "*", metadata.ACLOpWrite),
		deny(topic, pre, "pay-x", "User:alice", "*", metadata.ACLOpAll),
		allow(topic, lit, "*", "User:*", "*", metadata.ACLOpCreate),
		allow(topic, lit, "pub", "User:bob", "10.0.0.1", metadata.ACLOpRead),
		allow(topic, lit, "pub6", "User:bob", "::ffff:127.0.0.1", metadata.ACLOpRead),
		allow(topic, lit, "named", "User:bob", "localhost", metadata.ACLOpRead),
		allow(topic, lit, "cfg", "User:bob", "*", metadata.ACLOpAlterConfigs),
		allow(topic, lit, "all", "User:bob", "*", metadata.ACLOpAll),
		deny(topic, lit, "all", "User:bob", "*", metadata.ACLOpRead),
		deny(topic, lit, "dr", "User:bob", "*", metadata.ACLOpRead),
		allow(topic, lit, "dr", "User:bob", "*", metadata.ACLOpDescribe),
		allow(group, pre, "g", "User:alice", "127.0.0.1", metadata.ACLOpRead),
		deny(group, lit, "gx", "User:*", "*", metadata.ACLOpRead),
	)
	T, G, C := kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster
	R, W, D, DC := kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs
	for _, tc := range []struct {
		name string
		a    handler.Action
		want bool
	}{
		{"literal allow", act("User:alice", R, T, "orders"), true},
		{"other operation", act("User:alice", W, T, "orders"), false},
		{"other principal", act("User:carol", R, T, "orders"), false},
		{"READ implies DESCRIBE", act("User:alice", D, T, "orders"), true},
		{"prefixed allow", act("User:alice", W, T, "pay-in"), true},
		{"prefix itself", act("User:alice", W, T, "pay-"), true},
		{"shorter than prefix", act("User:alice", W, T, "pay"), false},
		{"literal deny wins over prefixed allow", act("User:alice", W, T, "pay-secret"), false},
		{"prefixed deny ALL wins", act("User:alice", W, T, "pay-xyz"), false},
		{"wildcard resource and principal", act("User:zed", kmsg.ACLOperationCreate, T, "anything"), true},
		{"host mismatch", act("User:bob", R, T, "pub"), false},
		{"IPv4-mapped host", act("User:bob", R, T, "pub6"), true},
		{"host name never matches", act("User:bob", R, T, "named"), false},
		{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", act("User:bob", DC, T, "cfg"), true},
		{"ALL allows", act("User:bob", W, T, "all"), true},
		{"deny READ wins over ALL", act("User:bob", R, T, "all"), false},
		{"deny READ does not deny DESCRIBE", act("User:bob", D, T, "dr"), true},
		{"group prefix with host", act("User:alice", R, G, "group-1"), true},
		{"deny User:* wins", act("User:alice", R, G, "gx"), false},
		{"no ACL: denied by default", act("User:alice", R, C, "kafka-cluster"), false},
		{"super user", act("User:admin", W, T, "pay-secret"), true},
		{"super user trimmed", act("User:root", R, C, "kafka-cluster"), true},
		{"bad type", act("User:alice", R, kmsg.ACLResourceType(42), "x"), false},
	} {
		if got := a.Authorize(tc.a); got != tc.want {
			t.Errorf("%s: Authorize(%+v) = %v, want %v", tc.name, tc.a, got, tc.want)
		}
	}
}

// TestAllowEveryoneIfNoACLFound: a resource no ACL applies to is allowed
// to all; one with any ACL (for whomever) is not.
func TestAllowEveryoneIfNoACLFound(t *testing.T) {
	a := newAuth(t, Config{AllowEveryoneIfNoACLFound: true},
		allow(topic, lit, "guarded", "User:alice", "*", metadata.ACLOpRead),
		allow(topic, pre, "team-", "User:alice", "*", metadata.ACLOpRead),
	)
	R := kmsg.ACLOperationRead
	T := kmsg.ACLResourceTypeTopic
	for _, tc := range []struct {
		a    handler.Action
		want bool
	}{
		{act("User:bob", R, T, "free"), true},
		{act("User:bob", R, T, "guarded"), false},
		{act("User:bob", R, T, "team-x"), false},
		{act("User:alice", R, T, "guarded"), true},
	} {
		if got := a.Authorize(tc.a); got != tc.want {
			t.Errorf("Authorize(%+v) = %v, want %v", tc.a, got, tc.want)
		}
	}
}

// TestIndexFollowsCache: ACLs written through another handle of the store
// (another broker) are enforced once Run saw the cache change.
func TestIndexFollowsCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memstore.NewBackend()
		mine, other := b.Open(), b.Open()
		a := New(Config{}, mine.Cache(), mine, nil)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); a.Run(ctx) }()
		x := act("User:alice", kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "t")
		if a.Authorize(x) {
			t.Fatal("allowed before any ACL")
		}
		acl := allow(topic, lit, "t", "User:alice", "*", metadata.ACLOpRead)
		if _, err := other.CreateACLs(ctx, []metadata.ACL{acl}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if !a.Authorize(x) {
			t.Fatal("an ACL created on another handle is not enforced")
		}
		if _, err := other.DeleteACLs(ctx, []metadata.ACL{acl}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if a.Authorize(x) {
			t.Fatal("a deleted ACL is still enforced")
		}
		cancel()
		<-done
		_ = mine.Close()
		_ = other.Close()
	})
}

// TestAuthorizeAny follows Kafka's authorizeByResourceType cases.
func TestAuthorizeAny(t *testing.T) {
	txn := metadata.ACLResourceTransactionalID
	W := kmsg.ACLOperationWrite
	TX := kmsg.ACLResourceTypeTransactionalId
	for _, tc := range []struct {
		name string
		cfg  Config
		acls []metadata.ACL
		want bool
	}{
		{"no ACLs", Config{}, nil, false},
		{"no ACLs, allow everyone", Config{AllowEveryoneIfNoACLFound: true}, nil, true},
		{"super user", Config{SuperUsers: []string{"User:alice"}}, []metadata.ACL{deny(txn, lit, "*", "User:alice", "*", metadata.ACLOpWrite)}, true},
		{"literal allow", Config{}, []metadata.ACL{allow(txn, lit, "tx1", "User:alice", "*", metadata.ACLOpWrite)}, true},
		{"literal allow denied literally", Config{}, []metadata.ACL{allow(txn, lit, "tx1", "User:alice", "*", metadata.ACLOpWrite), deny(txn, lit, "tx1", "User:alice", "*", metadata.ACLOpWrite)}, false},
		{"prefixed allow dominated by shorter deny", Config{}, []metadata.ACL{allow(txn, pre, "tx-a", "User:alice", "*", metadata.ACLOpWrite), deny(txn, pre, "tx-", "User:alice", "*", metadata.ACLOpWrite)}, false},
		{"prefixed allow, longer deny", Config{}, []metadata.ACL{allow(txn, pre, "tx-", "User:alice", "*", metadata.ACLOpWrite), deny(txn, pre, "tx-a", "User:alice", "*", metadata.ACLOpWrite)}, true},
		{"wildcard deny", Config{}, []metadata.ACL{allow(txn, lit, "tx1", "User:alice", "*", metadata.ACLOpAll), deny(txn, lit, "*", "User:*", "*", metadata.ACLOpWrite)}, false},
		{"other operation", Config{}, []metadata.ACL{allow(txn, lit, "tx1", "User:alice", "*", metadata.ACLOpDescribe)}, false},
		{"other host", Config{}, []metadata.ACL{allow(txn, lit, "tx1", "User:alice", "10.1.1.1", metadata.ACLOpWrite)}, false},
	} {
		a := newAuth(t, tc.cfg, tc.acls...)
		if got := a.AuthorizeAny("User:alice", local, W, TX); got != tc.want {
			t.Errorf("%s: AuthorizeAny = %v, want %v", tc.name, got, tc.want)
		}
	}
}
