package config

import (
	"slices"
	"testing"
)

func TestAuthorizerKeys(t *testing.T) {
	b, err := Parse(map[string]string{
		"authorizer.class.name":          "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                    "User:admin; User:CN=broker,O=Acme ;",
		"allow.everyone.if.no.acl.found": "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	a := b.Authorizer
	if a.ClassName != "org.apache.kafka.metadata.authorizer.StandardAuthorizer" || !a.AllowEveryoneIfNoACLFound ||
		!slices.Equal(a.SuperUsers, []string{"User:admin", "User:CN=broker,O=Acme"}) {
		t.Fatalf("parsed %+v", a)
	}
	if got := b.Raw["super.users"]; got != "User:admin;User:CN=broker,O=Acme" {
		t.Fatalf("raw super.users %q", got)
	}
	def, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if def.Authorizer.ClassName != "" || def.Authorizer.AllowEveryoneIfNoACLFound || len(def.Authorizer.SuperUsers) != 0 {
		t.Fatalf("defaults %+v", def.Authorizer)
	}
	for _, c := range AuthorizerClasses {
		if _, err := Parse(map[string]string{"authorizer.class.name": c}); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
	for k, v := range map[string]string{
		"authorizer.class.name": "com.example.MyAuthorizer",
		"super.users":           "admin",
	} {
		if _, err := Parse(map[string]string{k: v}); err == nil {
			t.Errorf("%s=%s accepted", k, v)
		}
	}
}
