package console_test

import (
	"testing"

	"github.com/strata-broker/strata/test/harness"
)

// TestConsoleOffWithoutScram: a broker whose SASL listener enables only
// PLAIN leaves the console off, since it could check no login; with
// SCRAM enabled too it serves it.
func TestConsoleOffWithoutScram(t *testing.T) {
	cfg := func(mechs string) map[string]string {
		return map[string]string{
			"listeners":                      "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT",
			"inter.broker.listener.name":     "PLAINTEXT",
			"sasl.enabled.mechanisms":        mechs,
			"listener.name.sasl.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
				`username="admin" password="admin-secret" user_admin="admin-secret";`,
			"console.listener": "127.0.0.1:0",
		}
	}
	if addr := harness.Start(t, cfg("PLAIN")).Server().ConsoleAddr(); addr != "" {
		t.Fatalf("PLAIN only: the console serves on %s", addr)
	}
	if addr := harness.Start(t, cfg("PLAIN,SCRAM-SHA-256")).Server().ConsoleAddr(); addr == "" {
		t.Fatal("with SCRAM: no console")
	}
}

// TestConsoleListenerEmptyIsOff: console.listener "" serves no console.
func TestConsoleListenerEmptyIsOff(t *testing.T) {
	if addr := harness.Start(t, map[string]string{"console.listener": ""}).Server().ConsoleAddr(); addr != "" {
		t.Fatalf("console.listener empty: the console serves on %s", addr)
	}
}
