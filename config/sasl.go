package config

import (
	"fmt"
	"slices"
	"strings"
)

// SASL is the sasl.* keys of one listener (Kafka's SaslConfigs, for the
// mechanisms Strata serves). Empty strings are unset keys.
type SASL struct {
	// EnabledMechanisms is sasl.enabled.mechanisms, canonical upper case.
	EnabledMechanisms []string
	// MechanismInterBrokerProtocol is sasl.mechanism.inter.broker.protocol.
	MechanismInterBrokerProtocol string
	// JAASConfig is sasl.jaas.config as set without a mechanism prefix
	// (sensitive).
	JAASConfig string
	// JAAS is each mechanism's listener.name.<l>.<mechanism>.sasl.jaas.config
	// by lower-case mechanism name (sensitive).
	JAAS                        map[string]string
	OAuthBearerJWKSEndpointURL  string   // sasl.oauthbearer.jwks.endpoint.url
	OAuthBearerExpectedIssuer   string   // sasl.oauthbearer.expected.issuer
	OAuthBearerExpectedAudience []string // sasl.oauthbearer.expected.audience
}

// SASL mechanisms Strata serves, and GSSAPI, Kafka's default, which it
// does not.
var saslMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI"}

func saslMechanismItem(v string) (string, error) {
	return oneOf(v, saslMechanisms)
}

// jaasSuffix ends a per-mechanism JAAS key: <mechanism>.sasl.jaas.config.
const jaasSuffix = ".sasl.jaas.config"

// jaasMechanism splits <mechanism>.sasl.jaas.config, the form Kafka takes
// a listener's JAAS configuration in, returning the lower-case mechanism.
func jaasMechanism(key string) (string, bool) {
	mech, ok := strings.CutSuffix(key, jaasSuffix)
	if !ok || strings.Contains(mech, ".") {
		return "", false
	}
	if !slices.ContainsFunc(saslMechanisms, func(m string) bool { return strings.EqualFold(m, mech) }) {
		return "", false
	}
	return strings.ToLower(mech), true
}

// checkSASL checks what a SASL listener needs: mechanisms Strata serves,
// and the inter-broker mechanism enabled on the inter-broker listener.
func (b *Broker) checkSASL() error {
	for _, l := range b.KafkaListeners {
		if !l.SASL() {
			continue
		}
		s := b.SASLFor(l.Name)
		if len(s.EnabledMechanisms) == 0 {
			return invalid("sasl.enabled.mechanisms", fmt.Errorf("listener %s (%s) needs at least one mechanism", l.Name, l.Protocol))
		}
		if slices.Contains(s.EnabledMechanisms, "GSSAPI") {
			return invalid("sasl.enabled.mechanisms", fmt.Errorf("listener %s: GSSAPI (Kerberos) is not supported; use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER", l.Name))
		}
		if l.Name == b.InterBrokerListenerName && !slices.Contains(s.EnabledMechanisms, s.MechanismInterBrokerProtocol) {
			return invalid("sasl.mechanism.inter.broker.protocol", fmt.Errorf("%s is not in sasl.enabled.mechanisms of the inter-broker listener %s (%s)", s.MechanismInterBrokerProtocol, l.Name, strings.Join(s.EnabledMechanisms, ",")))
		}
	}
	return nil
}

// SASLFor returns a listener's SASL settings: the sasl.* keys overlaid by
// its listener.name.<name>.sasl.* and <mechanism>.sasl.jaas.config ones.
func (b *Broker) SASLFor(listener string) SASL {
	if s, ok := b.listenerSASL[strings.ToLower(listener)]; ok {
		return s
	}
	return b.SASL
}
