package config

import (
	"errors"
	"strings"
	"testing"
)

// TestPrincipalRulesValid: the rules Kafka's SslPrincipalMapperTest
// accepts parse.
func TestPrincipalRulesValid(t *testing.T) {
	for _, r := range []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		"RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
		"RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
		"",
	} {
		if _, err := ParsePrincipalRules(r); err != nil {
			t.Errorf("%q: %v", r, err)
		}
	}
}

// TestPrincipalRulesInvalid: the rules Kafka's SslPrincipalMapperTest
// refuses fail.
func TestPrincipalRulesInvalid(t *testing.T) {
	for _, r := range []string{
		"default",
		"DEFAUL",
		"DEFAULT/L",
		"DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1/L/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1/U/L",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1/LU",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1/UL",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1/UL/",
		"RULE:CN=(.*?),OU=ServiceUsers.*/L",
		"RULE:CN=(.*?),OU=ServiceUsers.*/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$3/",
	} {
		if _, err := ParsePrincipalRules(r); err == nil {
			t.Errorf("%q parsed", r)
		}
	}
}

// TestPrincipalRulesMap: Kafka's SslPrincipalMapperTest mappings.
func TestPrincipalRulesMap(t *testing.T) {
	rules, err := ParsePrincipalRules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, " +
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, " +
		"RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, " +
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, " +
		"DEFAULT")
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=javasoft,dc=mycp,dc=com":        "DUKE@JAVASOFT",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		if got, err := rules.Name(dn); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", dn, got, err, want)
		}
	}
}

// TestPrincipalRulesCommaWithWhitespace: a rule whose pattern matches an
// escaped comma (Kafka's testCommaWithWhitespace).
func TestPrincipalRulesCommaWithWhitespace(t *testing.T) {
	rules, err := ParsePrincipalRules(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rules.Name(`CN=Kafka\, Server,OU=ServiceUsers`); err != nil || got != `Kafka\, Server` {
		t.Fatalf("%q, %v", got, err)
	}
}

// TestPrincipalRulesNoMatch: without DEFAULT, a name no rule matches is
// an error naming it.
func TestPrincipalRulesNoMatch(t *testing.T) {
	rules, err := ParsePrincipalRules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rules.Name("CN=x,OU=Other"); !errors.Is(err, ErrNoPrincipalRule) || !strings.Contains(err.Error(), "CN=x,OU=Other") {
		t.Fatalf("%v", err)
	}
	if got, _ := rules.Name("CN=svc,OU=ServiceUsers,O=Org"); got != "svc" {
		t.Fatalf("%q", got)
	}
}

// TestSSLSecretsRedacted: ssl secrets, broker-wide and per listener, are
// hidden in DescribeConfigs and in logs.
func TestSSLSecretsRedacted(t *testing.T) {
	b, err := Parse(map[string]string{
		"listeners":                          "SSL://:1",
		"security.inter.broker.protocol":     "SSL",
		"ssl.key.password":                   "k1",
		"ssl.keystore.key":                   "-----BEGIN PRIVATE KEY-----",
		"listener.name.ssl.ssl.key.password": "k2",
		"listener.name.ssl.ssl.client.auth":  "required",
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]Entry{}
	for _, e := range b.DescribeBroker() {
		seen[e.Name] = e
		for _, s := range e.Synonyms {
			if s.Value == "k1" || s.Value == "k2" {
				t.Errorf("%s: synonym %s shows a secret", e.Name, s.Name)
			}
		}
	}
	for _, k := range []string{"ssl.key.password", "ssl.keystore.key", "listener.name.ssl.ssl.key.password"} {
		if e, ok := seen[k]; !ok || !e.Sensitive || e.Value != "" {
			t.Errorf("%s: %+v", k, e)
		}
	}
	if e := seen["listener.name.ssl.ssl.client.auth"]; e.Sensitive || e.Value != "required" || e.Source != SourceStaticBroker {
		t.Errorf("listener.name.ssl.ssl.client.auth: %+v", e)
	}
	r := redacted(b.static)
	if r["ssl.key.password"] == "k1" || r["listener.name.ssl.ssl.key.password"] == "k2" || r["ssl.keystore.key"] != "[hidden]" {
		t.Errorf("redacted: %v", r)
	}
}
