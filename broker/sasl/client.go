package sasl

import (
	"errors"
	"fmt"
	"strings"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ErrNoLogin is returned by ClientMechanism for a JAAS configuration
// without a username option.
var ErrNoLogin = errors.New("the JAAS configuration has no username option")

// ClientMechanism is the client side of mechanism (PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512, any case) logging in with the username and password
// options of a sasl.jaas.config value, as Kafka's clients and brokers do.
func ClientMechanism(mechanism, jaas string) (kgosasl.Mechanism, error) {
	e, err := ParseJAASConfig(jaas)
	if err != nil {
		return nil, err
	}
	user, pass := e.Options["username"], e.Options["password"]
	if user == "" {
		return nil, ErrNoLogin
	}
	switch strings.ToUpper(mechanism) {
	case MechanismPlain:
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case MechanismScramSHA256:
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case MechanismScramSHA512:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("SASL mechanism %q is not supported for a client login (use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", mechanism)
}
