package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/broker/sasl"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
)

// listenerSASL is what a SASL listener's connections share: its enabled
// mechanisms and the counter of its failed authentications.
type listenerSASL struct {
	mechs  []sasl.Mechanism
	failed prometheus.Counter
}

// failedAuthMetric counts failed SASL authentications by listener
// (Kafka's failed-authentication-total).
func failedAuthMetric(reg prometheus.Registerer) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_failed_authentication_total",
		Help: "Failed SASL authentications (a wrong password, an unknown user, a refused token, an unsupported mechanism), by listener, as Kafka's failed-authentication-total.",
	}, []string{"listener"})
	reg.MustRegister(v)
	return v
}

// newListenerSASL builds listener l's mechanisms from its sasl.* keys:
// PLAIN's users from its JAAS configuration, SCRAM's credentials from
// scram (the metadata cache, read at each exchange), OAUTHBEARER's keys
// from sasl.oauthbearer.jwks.endpoint.url.
func newListenerSASL(cfg *config.Broker, l config.Listener, scram func() *metadata.Cache, failed prometheus.Counter) (*listenerSASL, error) {
	sc := cfg.SASLFor(l.Name)
	ls := &listenerSASL{failed: failed}
	for _, name := range sc.EnabledMechanisms {
		var m sasl.Mechanism
		var err error
		switch name {
		case sasl.MechanismPlain:
			jaas := jaasFor(sc, name)
			if jaas == "" {
				return nil, fmt.Errorf("listener %s: PLAIN needs listener.name.%s.plain.sasl.jaas.config (a PlainLoginModule with user_<name>=\"<password>\" options)", l.Name, strings.ToLower(l.Name))
			}
			m, err = sasl.NewPlainFromJAAS(jaas)
		case sasl.MechanismScramSHA256, sasl.MechanismScramSHA512:
			m, err = sasl.NewScram(name, scramLookup(name, scram))
		case sasl.MechanismOAuthBearer:
			if sc.OAuthBearerJWKSEndpointURL == "" {
				return nil, fmt.Errorf("listener %s: OAUTHBEARER needs sasl.oauthbearer.jwks.endpoint.url", l.Name)
			}
			var keys *sasl.JWKS
			keys, err = sasl.NewJWKS(sasl.JWKSConfig{URL: sc.OAuthBearerJWKSEndpointURL})
			if err == nil {
				m, err = sasl.NewOAuthBearer(sasl.OAuthBearerConfig{Keys: keys, ExpectedIssuer: sc.OAuthBearerExpectedIssuer, ExpectedAudience: sc.OAuthBearerExpectedAudience})
			}
		default:
			err = fmt.Errorf("mechanism %s is not supported", name)
		}
		if err != nil {
			return nil, fmt.Errorf("listener %s: SASL %s: %w", l.Name, name, err)
		}
		ls.mechs = append(ls.mechs, m)
	}
	return ls, nil
}

// scramLookup finds a user's credential for mechanism in the metadata
// cache, which watches the store's SCRAM credentials.
func scramLookup(mechanism string, cache func() *metadata.Cache) sasl.ScramLookup {
	return func(_ context.Context, user string) (sasl.ScramCredential, bool, error) {
		c := cache()
		if c == nil {
			return sasl.ScramCredential{}, false, errors.New("metadata not loaded yet")
		}
		cred, ok := c.ScramCredential(user, mechanism)
		if !ok {
			return sasl.ScramCredential{}, false, nil
		}
		return sasl.ScramCredential{Salt: cred.Salt, Iterations: int(cred.Iterations), StoredKey: cred.StoredKey, ServerKey: cred.ServerKey}, true, nil
	}
}

// newAuth is a new connection's SASL state on listener ls.
func (s *Server) newAuth(ls *listenerSASL, listener string, log *slog.Logger) *handler.Auth {
	return &handler.Auth{
		Mechanisms: ls.mechs,
		MaxReauth:  time.Duration(s.cfg.ConnectionsMaxReauthMs) * time.Millisecond,
		FailDelay:  time.Duration(s.cfg.ConnectionFailedAuthenticationDelayMs) * time.Millisecond,
		Failed: func(err error) {
			ls.failed.Inc()
			attrs := []any{"listener", listener, "err", err}
			if ae, ok := errors.AsType[*sasl.AuthError](err); ok {
				attrs = append(attrs, "mechanism", ae.Mechanism, "user", ae.User)
			}
			// A warning, as a failed TLS handshake: the connection log's
			// rate limit bounds what guessing clients can log.
			log.Warn("failed authentication", attrs...)
		},
	}
}

// interBrokerSASL is the client mechanism this broker authenticates to
// the others with on a SASL inter-broker listener: the mechanism of
// sasl.mechanism.inter.broker.protocol, logging in with the username and
// password options of the listener's JAAS configuration for it, as Kafka
// does.
func interBrokerSASL(cfg *config.Broker) (kgosasl.Mechanism, error) {
	ib := cfg.InterBrokerListener()
	sc := cfg.SASLFor(ib.Name)
	name := sc.MechanismInterBrokerProtocol
	jaas := jaasFor(sc, name)
	if jaas == "" {
		return nil, fmt.Errorf("inter-broker listener %s: sasl.mechanism.inter.broker.protocol %s needs listener.name.%s.%s.sasl.jaas.config with username and password", ib.Name, name, strings.ToLower(ib.Name), strings.ToLower(name))
	}
	m, err := sasl.ClientMechanism(name, jaas)
	switch {
	case errors.Is(err, sasl.ErrNoLogin):
		return nil, fmt.Errorf("inter-broker listener %s: the %s JAAS configuration has no username option for the broker's own login", ib.Name, name)
	case err != nil:
		return nil, fmt.Errorf("inter-broker listener %s: sasl.mechanism.inter.broker.protocol %s: %w", ib.Name, name, err)
	}
	return m, nil
}

// jaasFor is the JAAS configuration of mechanism on a listener: its
// listener.name.<l>.<mechanism>.sasl.jaas.config, else sasl.jaas.config;
// "" when neither is set.
func jaasFor(sc config.SASL, mechanism string) string {
	if v, ok := sc.JAAS[strings.ToLower(mechanism)]; ok {
		return v
	}
	return sc.JAASConfig
}
