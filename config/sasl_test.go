package config

import (
	"slices"
	"strings"
	"testing"
)

// saslBase is a broker with a PLAINTEXT listener and a SASL_SSL one.
func saslBase(extra map[string]string) map[string]string {
	m := map[string]string{
		"listeners":                      "PLAINTEXT://:1,SECURE://:2",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:SASL_SSL",
		"sasl.enabled.mechanisms":        "scram-sha-512,PLAIN",
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// TestSASLPerListener: sasl.* keys apply to every listener, overridden by
// listener.name.<l>.sasl.*; a mechanism's JAAS is taken in Kafka's
// listener.name.<l>.<mechanism>.sasl.jaas.config form, and is secret.
func TestSASLPerListener(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="pw";`
	b, err := Parse(saslBase(map[string]string{
		"listener.name.secure.sasl.enabled.mechanisms":        "OAUTHBEARER",
		"listener.name.secure.plain.sasl.jaas.config":         jaas,
		"listener.name.secure.SCRAM-SHA-256.sasl.jaas.config": "x required;",
		"sasl.oauthbearer.expected.audience":                  "a,b",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := b.SASL.EnabledMechanisms; !slices.Equal(got, []string{"SCRAM-SHA-512", "PLAIN"}) {
		t.Errorf("broker-wide mechanisms %v", got)
	}
	s := b.SASLFor("SECURE")
	if !slices.Equal(s.EnabledMechanisms, []string{"OAUTHBEARER"}) || s.JAAS["plain"] != jaas || s.JAAS["scram-sha-256"] == "" ||
		!slices.Equal(s.OAuthBearerExpectedAudience, []string{"a", "b"}) {
		t.Errorf("SECURE: %+v", s)
	}
	for _, e := range b.DescribeBroker() {
		if e.Name == "listener.name.secure.plain.sasl.jaas.config" && (!e.Sensitive || e.Value != "") {
			t.Errorf("%s: %+v", e.Name, e)
		}
	}
	if !IsSensitive("listener.name.secure.plain.sasl.jaas.config") || !IsSensitive("sasl.jaas.config") || IsSensitive("sasl.enabled.mechanisms") {
		t.Error("JAAS keys must be sensitive, and only they")
	}
	if r := redacted(b.static); strings.Contains(r["listener.name.secure.plain.sasl.jaas.config"], "pw") {
		t.Errorf("redacted: %v", r)
	}
}

func TestSASLErrors(t *testing.T) {
	for _, tc := range []struct {
		kv   map[string]string
		want string
	}{
		{saslBase(map[string]string{"sasl.enabled.mechanisms": "GSSAPI"}), "GSSAPI (Kerberos) is not supported"},
		{saslBase(map[string]string{"sasl.enabled.mechanisms": "DIGEST-MD5"}), "sasl.enabled.mechanisms"},
		{saslBase(map[string]string{"sasl.enabled.mechanisms": ""}), "needs at least one mechanism"},
		{saslBase(map[string]string{"inter.broker.listener.name": "SECURE", "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"}), "is not in sasl.enabled.mechanisms of the inter-broker listener"},
		{saslBase(map[string]string{"listener.name.other.plain.sasl.jaas.config": "x required;"}), "listener OTHER is not in listeners"},
		{saslBase(map[string]string{"listener.name.secure.foo.sasl.jaas.config": "x required;"}), "listener.name.secure.foo.sasl.jaas.config"},
	} {
		if _, err := Parse(tc.kv); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.kv, err, tc.want)
		}
	}
}
