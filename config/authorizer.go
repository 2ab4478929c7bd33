package config

import (
	"fmt"
	"strings"
)

// Authorizer is the authorizer keys: which authorizer decides on ACLs,
// who bypasses it, and what it answers for a resource without ACLs.
type Authorizer struct {
	// ClassName is authorizer.class.name (""): one of AuthorizerClasses,
	// or "" for none (every request allowed).
	ClassName string
	// SuperUsers is super.users (""): principals allowed everything.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found (false).
	AllowEveryoneIfNoACLFound bool
}

// AuthorizerClasses are the authorizer.class.name values that turn on
// Strata's ACL authorizer: Kafka's KRaft and ZooKeeper authorizers'
// class names, and "strata".
var AuthorizerClasses = []string{"org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer", "strata"}

// authorizerClass accepts the names of AuthorizerClasses, or nothing.
func authorizerClass(v string) error {
	if v == "" {
		return nil
	}
	for _, c := range AuthorizerClasses {
		if v == c {
			return nil
		}
	}
	return fmt.Errorf("unsupported authorizer %q: want one of %s, or nothing", v, strings.Join(AuthorizerClasses, ", "))
}

// superUsersField parses super.users: principals separated by
// semicolons (a principal's name may hold commas), each TYPE:name.
func superUsersField(p func(*Broker) *[]string) field[Broker] {
	return field[Broker]{
		set: func(b *Broker, v string) error {
			var out []string
			for _, u := range strings.Split(v, ";") {
				if u = strings.TrimSpace(u); u == "" {
					continue
				}
				if i := strings.IndexByte(u, ':'); i <= 0 || i == len(u)-1 {
					return fmt.Errorf("super user %q is not a principal of the form User:name", u)
				}
				out = append(out, u)
			}
			*p(b) = out
			return nil
		},
		get:     func(b *Broker) string { return strings.Join(*p(b), ";") },
		targets: func(b *Broker) []any { return []any{p(b)} },
	}
}
