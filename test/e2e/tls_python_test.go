package e2e

import (
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/strata-broker/strata/internal/testcerts"
	"github.com/strata-broker/strata/test/harness"
)

// confluentMTLS produces n records to a topic with confluent-kafka-python
// (librdkafka) over SSL with a client certificate, then consumes them
// back in a group over the same listener, and prints the values read as
// JSON. Its arguments: address, topic, n, CA file, certificate file, key
// file.
const confluentMTLS = `
import json, sys, time
from confluent_kafka import Consumer, Producer

addr, topic, n, ca, cert, key = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
ssl = {'bootstrap.servers': addr, 'security.protocol': 'SSL', 'ssl.ca.location': ca,
       'ssl.certificate.location': cert, 'ssl.key.location': key}
errors = []
p = Producer(dict(ssl, **{'linger.ms': 5, 'enable.idempotence': True}))
for i in range(n):
    p.produce(topic, value=('v%d' % i).encode(),
              on_delivery=lambda err, m: err and errors.append(str(err)))
if p.flush(30) != 0 or errors:
    raise SystemExit('produce: %r' % errors)

c = Consumer(dict(ssl, **{'group.id': 'mtls-group', 'auto.offset.reset': 'earliest'}))
c.subscribe([topic])
out, deadline = [], time.time() + 45
while len(out) < n:
    if time.time() > deadline:
        raise SystemExit('consumed only %r' % out)
    m = c.poll(0.2)
    if m is None:
        continue
    if m.error():
        raise SystemExit('consume: %s' % m.error())
    out.append(m.value().decode())
c.close()
print(json.dumps(out))
`

// TestTLSConfluentPythonClientAuth: confluent-kafka-python (librdkafka)
// with a client certificate produces to and consumes in a group from an
// SSL listener with ssl.client.auth=required, reading back every record
// in order.
func TestTLSConfluentPythonClientAuth(t *testing.T) {
	f := newTLSFixture(t)
	b := harness.Start(t, f.sslKeys(map[string]string{
		"ssl.client.auth":                  "required",
		"offsets.topic.num.partitions":     "1",
		"offsets.topic.replication.factor": "1",
	}))
	const topic, n = "mtls-python", 20
	alice := f.issue(t, testcerts.Options{Subject: pkix.Name{CommonName: "alice"}})
	out := harness.PythonConfluent(t, confluentMTLS, b.Addr(), topic, strconv.Itoa(n), f.caFile,
		f.write(t, "alice.crt", alice.CertPEM), f.write(t, "alice.key", alice.KeyPEM))
	var got []string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("python output: %v\n%s", err, out)
	}
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("v%d", i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("confluent consumer read %q, want %q", got, want)
	}
}
