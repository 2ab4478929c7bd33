package metadata

import "testing"

// TestACLFilterMatches follows Kafka's ResourcePatternFilter and
// AccessControlEntryFilter matching.
func TestACLFilterMatches(t *testing.T) {
	str := func(s string) *string { return &s }
	lit := ACL{ResourceType: ACLResourceTopic, ResourceName: "orders", PatternType: ACLPatternLiteral, Principal: "User:a", Host: "*", Operation: ACLOpRead, Permission: ACLAllow}
	star := lit
	star.ResourceName = "*"
	pre := lit
	pre.ResourceName, pre.PatternType = "ord", ACLPatternPrefixed
	anyF := ACLFilter{ResourceType: ACLResourceAny, PatternType: ACLPatternAny, Operation: ACLOpAny, Permission: ACLPermissionAny}
	with := func(f func(*ACLFilter)) ACLFilter {
		g := anyF
		f(&g)
		return g
	}
	for _, tc := range []struct {
		name string
		f    ACLFilter
		a    ACL
		want bool
	}{
		{"any", anyF, pre, true},
		{"type", with(func(f *ACLFilter) { f.ResourceType = ACLResourceGroup }), lit, false},
		{"ANY name equal", with(func(f *ACLFilter) { f.ResourceName = str("orders") }), lit, true},
		{"ANY name not a match", with(func(f *ACLFilter) { f.ResourceName = str("orders") }), star, false},
		{"MATCH wildcard", with(func(f *ACLFilter) { f.ResourceName, f.PatternType = str("orders"), ACLPatternMatch }), star, true},
		{"MATCH prefix", with(func(f *ACLFilter) { f.ResourceName, f.PatternType = str("orders"), ACLPatternMatch }), pre, true},
		{"MATCH longer prefix", with(func(f *ACLFilter) { f.ResourceName, f.PatternType = str("or"), ACLPatternMatch }), pre, false},
		{"MATCH without name", with(func(f *ACLFilter) { f.PatternType = ACLPatternMatch }), pre, true},
		{"LITERAL filter, PREFIXED ACL", with(func(f *ACLFilter) { f.PatternType = ACLPatternLiteral }), pre, false},
		{"PREFIXED name equality", with(func(f *ACLFilter) { f.ResourceName, f.PatternType = str("orders"), ACLPatternPrefixed }), pre, false},
		{"principal", with(func(f *ACLFilter) { f.Principal = str("User:b") }), lit, false},
		{"host", with(func(f *ACLFilter) { f.Host = str("*") }), lit, true},
		{"operation", with(func(f *ACLFilter) { f.Operation = ACLOpWrite }), lit, false},
		{"permission", with(func(f *ACLFilter) { f.Permission = ACLDeny }), lit, false},
	} {
		if got := tc.f.Matches(tc.a); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if with(func(f *ACLFilter) { f.PatternType = ACLPatternUnknown }).Valid() || !anyF.Valid() {
		t.Error("Valid")
	}
	for _, s := range []string{"TOPIC", "TRANSACTIONAL_ID", "USER"} {
		if ty, ok := ParseACLResourceType(s); !ok || ty.String() != s {
			t.Errorf("%s round-trips as %v %v", s, ty, ok)
		}
	}
	if _, ok := ParseACLOperation("UNKNOWN"); ok {
		t.Error("UNKNOWN parsed")
	}
}
