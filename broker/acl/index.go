package acl

import (
	"net/netip"
	"slices"

	"github.com/strata-broker/strata/metadata"
)

// numTypes bounds the resource type codes (metadata.ACLResourceUser is
// the last).
const numTypes = int(metadata.ACLResourceUser) + 1

// rule is one ACL's entry, ready for matching.
type rule struct {
	principal    string // unused when anyPrincipal
	anyPrincipal bool   // "User:*"
	host         netip.Addr
	anyHost      bool // "*"
	badHost      bool // not an IP address: matches no client (Kafka compares addresses)
	op           metadata.ACLOperation
	deny         bool
}

// resources indexes the ACLs of one resource type.
type resources struct {
	literal  map[string][]rule // LITERAL by name, except "*"
	wildcard []rule            // LITERAL "*"
	prefixed map[string][]rule // PREFIXED by prefix
	lens     []int             // the distinct prefix lengths, ascending
	all      []ruledACL        // every ACL of the type, for AuthorizeAny
}

// ruledACL is an ACL with its rule, made once by build.
type ruledACL struct {
	acl  metadata.ACL
	rule rule
}

// index is an immutable snapshot of the ACLs, built by build.
type index struct {
	version uint64 // the Cache's ACL version it was built from
	types   [numTypes]resources
}

// build indexes acls.
func build(acls []metadata.ACL, version uint64) *index {
	ix := &index{version: version}
	for _, a := range acls {
		t := int(a.ResourceType)
		if t < 0 || t >= numTypes {
			continue
		}
		r := &ix.types[t]
		ru := newRule(a)
		r.all = append(r.all, ruledACL{acl: a, rule: ru})
		switch {
		case a.PatternType == metadata.ACLPatternLiteral && a.ResourceName == metadata.ACLWildcard:
			r.wildcard = append(r.wildcard, ru)
		case a.PatternType == metadata.ACLPatternLiteral:
			if r.literal == nil {
				r.literal = make(map[string][]rule)
			}
			r.literal[a.ResourceName] = append(r.literal[a.ResourceName], ru)
		case a.PatternType == metadata.ACLPatternPrefixed:
			if r.prefixed == nil {
				r.prefixed = make(map[string][]rule)
			}
			if _, ok := r.prefixed[a.ResourceName]; !ok {
				r.lens = append(r.lens, len(a.ResourceName))
			}
			r.prefixed[a.ResourceName] = append(r.prefixed[a.ResourceName], ru)
		}
	}
	for t := range ix.types {
		r := &ix.types[t]
		slices.Sort(r.lens)
		r.lens = slices.Compact(r.lens)
	}
	return ix
}

func newRule(a metadata.ACL) rule {
	ru := rule{op: a.Operation, deny: a.Permission == metadata.ACLDeny}
	if a.Principal == metadata.ACLWildcardPrincipal {
		ru.anyPrincipal = true
	} else {
		ru.principal = a.Principal
	}
	if a.Host == metadata.ACLWildcard {
		ru.anyHost = true
	} else if h, err := netip.ParseAddr(a.Host); err == nil {
		ru.host = h.Unmap()
	} else {
		ru.badHost = true
	}
	return ru
}

// match gathers the outcome of the rules that apply to one resource.
type match struct {
	principal string
	host      netip.Addr
	op        metadata.ACLOperation
	found     bool // some ACL applies to the resource (whoever it names)
	allowed   bool
	denied    bool
}

// scan folds rules, all of which apply to the resource, into m.
func (m *match) scan(rules []rule) {
	if len(rules) > 0 {
		m.found = true
	}
	for i := range rules {
		r := &rules[i]
		if !r.anyPrincipal && r.principal != m.principal {
			continue
		}
		if !r.anyHost && (r.badHost || r.host != m.host) {
			continue
		}
		if r.deny {
			if r.op == metadata.ACLOpAll || r.op == m.op {
				m.denied = true
				return
			}
			continue
		}
		if r.op == metadata.ACLOpAll || r.op == m.op || implies(r.op, m.op) {
			m.allowed = true
		}
	}
}

// implies reports whether an ALLOW of have also allows want: READ, WRITE,
// DELETE and ALTER allow DESCRIBE; ALTER_CONFIGS allows DESCRIBE_CONFIGS.
func implies(have, want metadata.ACLOperation) bool {
	switch want {
	case metadata.ACLOpDescribe:
		return have == metadata.ACLOpRead || have == metadata.ACLOpWrite || have == metadata.ACLOpDelete || have == metadata.ACLOpAlter
	case metadata.ACLOpDescribeConfigs:
		return have == metadata.ACLOpAlterConfigs
	}
	return false
}

// check matches every rule that applies to the resource name of type r.
func (r *resources) check(m *match, name string) {
	m.scan(r.literal[name])
	if m.denied {
		return
	}
	m.scan(r.wildcard)
	for _, n := range r.lens {
		if m.denied || n > len(name) {
			return
		}
		m.scan(r.prefixed[name[:n]])
	}
}
