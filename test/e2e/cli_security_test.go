package e2e

import (
	"crypto/x509/pkix"
	"encoding/json"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/internal/testcerts"
	"github.com/strata-broker/strata/test/harness"
)

// TestCLICommandConfig: `strata txn list --command-config` reaches a
// SASL_SSL listener that also requires a client certificate, with the
// Kafka client properties of Kafka's tools (PEM trust and key stores,
// SCRAM-SHA-512 with a JAAS login), and a wrong password is refused.
func TestCLICommandConfig(t *testing.T) {
	f := newTLSFixture(t)
	b, addr, _ := saslBroker(t, "SASL_SSL", "SCRAM-SHA-512", map[string]string{
		"ssl.keystore.type": "PEM", "ssl.keystore.location": f.keystore,
		"ssl.truststore.type": "PEM", "ssl.truststore.location": f.caFile,
		"listener.name.sasl.ssl.client.auth":   "required",
		"transaction.state.log.num.partitions": "1",
	})
	createScramUser(t, b.Admin(), "ops", "ops-pw", kadm.ScramSha512)
	cli := f.write(t, "cli.pem", f.issue(t, testcerts.Options{Subject: pkix.Name{CommonName: "strata-cli"}}).Keystore())
	const topic = "cli-sec"
	harness.CreateTopic(t, b.Admin(), topic, 1, nil)
	pr := b.Client(kgo.TransactionalID("cli-open"), kgo.DefaultProduceTopic(topic))
	if err := pr.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produceSync(t, pr, &kgo.Record{Value: []byte("open")})

	props := func(password string) string {
		return f.write(t, "client-"+password+".properties", "security.protocol=SASL_SSL\n"+
			"ssl.truststore.type=PEM\nssl.truststore.location="+f.caFile+"\n"+
			"ssl.keystore.type=PEM\nssl.keystore.location="+cli+"\n"+
			"sasl.mechanism=SCRAM-SHA-512\n"+
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="ops" password="`+password+"\";\n")
	}
	out, errOut, code := strataCLI(t, "txn", "list", "--brokers", addr, "--command-config", props("ops-pw"), "--json")
	var listed []cliTxn
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 || listed[0].TransactionalID != "cli-open" || listed[0].State != "Ongoing" {
		t.Fatalf("txn list over SASL_SSL: exit %d, %q, stderr %q", code, out, errOut)
	}
	if _, errOut, code = strataCLI(t, "txn", "list", "--brokers", addr, "--command-config", props("wrong")); code == 0 {
		t.Fatalf("txn list with a wrong password: exit 0, stderr %q", errOut)
	}
	t.Logf("wrong password: %s", errOut)
}
