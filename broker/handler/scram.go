package handler

import (
	"github.com/strata-broker/strata/broker/sasl"
)

// SCRAM iteration bounds of AlterUserScramCredentials, as Kafka's.
const (
	scramMinIterations = 4096
	scramMaxIterations = 16384
)

// scramMechanisms are the mechanism codes of the SCRAM admin APIs (Kafka's
// ScramMechanism: 0 is UNKNOWN).
var scramMechanisms = map[int8]string{1: sasl.MechanismScramSHA256, 2: sasl.MechanismScramSHA512}

// scramCode is the code of a SCRAM mechanism's name.
func scramCode(name string) int8 {
	for c, n := range scramMechanisms {
		if n == name {
			return c
		}
	}
	return 0
}

func strPtr(s string) *string { return &s }
