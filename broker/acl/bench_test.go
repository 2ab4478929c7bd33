package acl

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/metadata"
)

// TenThousandACLs is 5,000 LITERAL and 5,000 PREFIXED topic ACLs over
// 100 principals, with prefixes of several lengths, the load the
// authorizer benchmarks (here and in test/bench) run against. Topic
// "topic-<i>" has a LITERAL ACL for i < 5000; "team-<j>-" prefixes cover
// "team-<j>-…" names.
func tenThousandACLs() []metadata.ACL {
	acls := make([]metadata.ACL, 0, 10000)
	for i := range 5000 {
		acls = append(acls, metadata.ACL{ResourceType: metadata.ACLResourceTopic, PatternType: metadata.ACLPatternLiteral,
			ResourceName: fmt.Sprintf("topic-%d", i), Principal: fmt.Sprintf("User:u%d", i%100), Host: "*",
			Operation: metadata.ACLOpWrite, Permission: metadata.ACLAllow})
		acls = append(acls, metadata.ACL{ResourceType: metadata.ACLResourceTopic, PatternType: metadata.ACLPatternPrefixed,
			ResourceName: fmt.Sprintf("team-%d-%s", i%1000, "abcde"[:i%5]), Principal: fmt.Sprintf("User:u%d", i%100), Host: "*",
			Operation: metadata.ACLOperation(3 + i%3), Permission: metadata.ACLAllow})
	}
	return acls
}

// BenchmarkAuthorize: one Authorize with 10,000 ACLs loaded.
func BenchmarkAuthorize(b *testing.B) {
	a := newAuth(b, Config{}, tenThousandACLs()...)
	if _, v := a.cache.ACLs(); a.idx.Load().version != v {
		b.Fatal("index not built")
	}
	host := local
	for _, bc := range []struct {
		name string
		act  handler.Action
		want bool
	}{
		{"literal", handler.Action{Principal: "User:u42", Host: host, Op: kmsg.ACLOperationWrite, Type: kmsg.ACLResourceTypeTopic, Name: "topic-4242"}, true},
		{"prefixed", handler.Action{Principal: "User:u7", Host: host, Op: kmsg.ACLOperationRead, Type: kmsg.ACLResourceTypeTopic, Name: "team-7-abcd-orders"}, true},
		{"implied describe", handler.Action{Principal: "User:u42", Host: host, Op: kmsg.ACLOperationDescribe, Type: kmsg.ACLResourceTypeTopic, Name: "topic-4242"}, true},
		{"no acl", handler.Action{Principal: "User:u42", Host: host, Op: kmsg.ACLOperationWrite, Type: kmsg.ACLResourceTypeTopic, Name: "unrelated-topic-name"}, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if got := a.Authorize(bc.act); got != bc.want {
				b.Fatalf("Authorize = %v, want %v", got, bc.want)
			}
			b.ReportAllocs()
			for b.Loop() {
				a.Authorize(bc.act)
			}
		})
	}
}

// TestAuthorizeAllocatesNothing with 10,000 ACLs.
func TestAuthorizeAllocatesNothing(t *testing.T) {
	a := newAuth(t, Config{}, tenThousandACLs()...)
	act := handler.Action{Principal: "User:u7", Host: local, Op: kmsg.ACLOperationRead, Type: kmsg.ACLResourceTypeTopic, Name: "team-7-abcd-orders"}
	if n := testing.AllocsPerRun(100, func() { a.Authorize(act) }); n != 0 {
		t.Fatalf("%v allocations per Authorize", n)
	}
}

// BenchmarkAuthorizeAny: one AuthorizeAny that has to walk the 10,000
// ACLs of the topic type (no "hardcode" or wildcard shortcut applies).
func BenchmarkAuthorizeAny(b *testing.B) {
	a := newAuth(b, Config{}, tenThousandACLs()...)
	if !a.AuthorizeAny("User:u42", local, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
		b.Fatal("AuthorizeAny = false, want true")
	}
	b.ReportAllocs()
	for b.Loop() {
		a.AuthorizeAny("User:u42", local, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic)
	}
}
