package e2e

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// Dynamic broker configs (Kafka's AlterConfigs/IncrementalAlterConfigs
// on a broker resource), changed with sarama, franz-go's kadm and
// kafka-python: applied live, described with their sources, kept across a
// restart, and refused for static keys.

// saramaAdmin returns a sarama cluster admin for addr, closed at test end.
func saramaAdmin(t *testing.T, addr string) sarama.ClusterAdmin {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	adm, err := sarama.NewClusterAdmin([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama admin: %v", err)
	}
	t.Cleanup(func() { _ = adm.Close() })
	return adm
}

// saramaSet changes keys of broker resource name with sarama's
// IncrementalAlterConfig (SET).
func saramaSet(adm sarama.ClusterAdmin, name string, kv ...string) error {
	entries := map[string]sarama.IncrementalAlterConfigsEntry{}
	for i := 0; i+1 < len(kv); i += 2 {
		entries[kv[i]] = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &kv[i+1]}
	}
	return adm.IncrementalAlterConfig(sarama.BrokerResource, name, entries, false)
}

// saramaDescribe returns the described entries of one resource by name.
func saramaDescribe(t *testing.T, adm sarama.ClusterAdmin, typ sarama.ConfigResourceType, name string) map[string]sarama.ConfigEntry {
	t.Helper()
	res, err := adm.DescribeConfigs([]*sarama.ConfigResource{{Type: typ, Name: name}}, sarama.DescribeConfigsOptions{IncludeSynonyms: true})
	if err != nil || len(res) != 1 || res[0].ErrorCode != 0 {
		t.Fatalf("describe %v %q: %v %+v", typ, name, err, res)
	}
	out := map[string]sarama.ConfigEntry{}
	for _, e := range res[0].Configs {
		out[e.Name] = e
	}
	return out
}

// wantSaramaEntry checks a described value, its source and that its
// first synonym is where it comes from.
func wantSaramaEntry(t *testing.T, es map[string]sarama.ConfigEntry, key, value string, source sarama.ConfigSource) {
	t.Helper()
	e, ok := es[key]
	if !ok {
		t.Fatalf("%s not described", key)
	}
	if e.Value != value || e.Source != source {
		t.Fatalf("%s = %q from %v, want %q from %v", key, e.Value, e.Source, value, source)
	}
	if len(e.Synonyms) == 0 || e.Synonyms[0].Source != source || e.Synonyms[0].ConfigValue != value {
		t.Fatalf("%s synonyms %+v, want %q from %v first", key, e.Synonyms, value, source)
	}
}

// bigRecordClient produces uncompressed batches of up to 4 MiB (the
// broker decides).
func bigRecordClient(b *harness.Broker, topic string) *kgo.Client {
	return b.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(4<<20), kgo.RecordRetries(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
}

// TestDynamicBrokerConfigsSarama: with sarama's IncrementalAlterConfig, a
// cluster-default log.retention.ms reaches a topic without an override
// (its old segments are deleted), a per-broker message.max.bytes lets a
// larger batch in, DescribeConfigs reports both sources and synonyms, a
// static key is refused, and after a restart the values still apply.
func TestDynamicBrokerConfigsSarama(t *testing.T) {
	b := harness.Start(t, map[string]string{"log.retention.check.interval.ms": "50"})
	adm := saramaAdmin(t, b.Addr())
	kadmin := b.Admin()
	const topic = "dyn-sarama"
	harness.CreateTopic(t, kadmin, topic, 1, map[string]string{"segment.bytes": "1024"})

	// Records two hours old fill a few sealed segments; the week of
	// default retention keeps them.
	cl := bigRecordClient(b, topic)
	old := time.Now().Add(-2 * time.Hour)
	for i := range 40 {
		produceSync(t, cl, &kgo.Record{Value: []byte(strings.Repeat("x", 100) + string(rune('a'+i%26))), Timestamp: old})
	}
	produceSync(t, cl, &kgo.Record{Value: []byte("now")})
	if start := startOffset(t, kadmin, topic, 0); start != 0 {
		t.Fatalf("log start %d before any retention change", start)
	}

	// A cluster-wide default of one hour: the old segments go.
	if err := saramaSet(adm, "", "log.retention.ms", "3600000"); err != nil {
		t.Fatalf("set the cluster default: %v", err)
	}
	waitFor(t, "the old segments to be deleted under the dynamic retention", func() bool { return startOffset(t, kadmin, topic, 0) > 0 })

	// message.max.bytes for this broker: a 1.2 MB batch is refused by
	// the default and accepted by the new value.
	big := &kgo.Record{Value: make([]byte, 1200<<10)}
	if err := cl.ProduceSync(testCtx(t), big).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("1.2 MB batch under the default message.max.bytes: %v, want MESSAGE_TOO_LARGE", err)
	}
	if err := saramaSet(adm, "1", "message.max.bytes", "2000000"); err != nil {
		t.Fatalf("set message.max.bytes on broker 1: %v", err)
	}
	produceSync(t, cl, &kgo.Record{Value: make([]byte, 1200<<10)})

	// A static key: refused with Kafka's message, nothing changes.
	err := saramaSet(adm, "1", "log.dirs", "/elsewhere", "log.cleaner.threads", "2")
	if !errors.Is(err, sarama.ErrInvalidRequest) || !strings.Contains(err.Error(), "Cannot update these configs dynamically: Set(log.dirs)") {
		t.Fatalf("a static key: %v, want INVALID_REQUEST naming it", err)
	}

	check := func(when string) {
		t.Helper()
		es := saramaDescribe(t, adm, sarama.BrokerResource, "1")
		wantSaramaEntry(t, es, "message.max.bytes", "2000000", sarama.SourceDynamicBroker)
		wantSaramaEntry(t, es, "log.retention.ms", "3600000", sarama.SourceDynamicDefaultBroker)
		wantSaramaEntry(t, es, "log.cleaner.threads", "1", sarama.SourceDefault)
		if syn := es["log.retention.ms"].Synonyms; len(syn) != 2 || syn[1].ConfigName != "log.retention.hours" || syn[1].Source != sarama.SourceDefault {
			t.Fatalf("%s: log.retention.ms synonyms %+v, want the dynamic default then log.retention.hours' default", when, syn)
		}
		if es["message.max.bytes"].ReadOnly || !es["log.dirs"].ReadOnly {
			t.Fatalf("%s: read-only: message.max.bytes %v, log.dirs %v", when, es["message.max.bytes"].ReadOnly, es["log.dirs"].ReadOnly)
		}
		def := saramaDescribe(t, adm, sarama.BrokerResource, "")
		if len(def) != 1 {
			t.Fatalf("%s: cluster default described as %+v, want log.retention.ms alone", when, def)
		}
		wantSaramaEntry(t, def, "log.retention.ms", "3600000", sarama.SourceDynamicDefaultBroker)
		tc := saramaDescribe(t, adm, sarama.TopicResource, topic)
		wantSaramaEntry(t, tc, "retention.ms", "3600000", sarama.SourceDynamicDefaultBroker)
		wantSaramaEntry(t, tc, "max.message.bytes", "2000000", sarama.SourceDynamicBroker)
	}
	check("before the restart")

	// Kept in etcd: after a restart the broker applies them at once.
	b.Restart()
	adm = saramaAdmin(t, b.Addr())
	check("after the restart")
	produceSync(t, bigRecordClient(b, topic), &kgo.Record{Value: make([]byte, 1200<<10)})
}

// TestDynamicBrokerConfigsKadm: on two brokers, kadm's
// AlterBrokerConfigs (incremental) sets a cluster-wide
// num.replica.fetchers that both brokers take (replication goes on over
// the re-spread fetch loops), AlterBrokerConfigsState (legacy AlterConfigs)
// replaces broker 2's own set, DescribeBrokerConfigs reports each
// broker's sources, a static key is refused, and broker 2 keeps its own
// set across a restart.
func TestDynamicBrokerConfigsKadm(t *testing.T) {
	bs := startCluster(t, 2, nil)
	adm := bs[0].Admin()
	ctx := testCtx(t)
	set := func(k, v string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)}
	}
	alterOK := func(what string, rs kadm.AlterConfigsResponses, err error) {
		t.Helper()
		if err == nil {
			for _, r := range rs {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	const topic = "dyn-kadm"
	resp, err := adm.CreateTopic(ctx, 4, 2, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	cl := bs[0].Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	produce := func(n int) {
		t.Helper()
		for i := range n {
			produceSync(t, cl, &kgo.Record{Key: []byte{byte(i)}, Value: []byte("v")})
		}
	}
	produce(20)

	rs, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("num.replica.fetchers", "2"), set("log.segment.bytes", "1048576")})
	alterOK("cluster-wide num.replica.fetchers", rs, err)
	rs, err = adm.AlterBrokerConfigsState(ctx, []kadm.AlterConfig{set("log.cleaner.threads", "2"), set("log.segment.bytes", "2097152")}, 2)
	alterOK("broker 2's own set", rs, err)
	produce(20) // acks=all: broker 2 follows over its new fetch loops
	waitUntil(t, "identical replicas", 20*time.Second, func() bool { return replicasIdentical(t, bs, topic, 4) })

	rs, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{set("listeners", "PLAINTEXT://127.0.0.1:1")}, 1)
	if err == nil {
		err = rs[0].Err
	}
	if !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(rs[0].ErrMessage, "Cannot update these configs dynamically") {
		t.Fatalf("a static key: %v (%q), want INVALID_REQUEST", err, rs[0].ErrMessage)
	}

	check := func(when string) {
		t.Helper()
		described, err := adm.DescribeBrokerConfigs(ctx, 1, 2)
		if err != nil {
			t.Fatalf("%s: describe brokers: %v", when, err)
		}
		want := map[string]map[string]struct {
			value  string
			source kmsg.ConfigSource
		}{
			"1": {
				"num.replica.fetchers": {"2", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
				"log.segment.bytes":    {"1048576", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
				"log.cleaner.threads":  {"1", kmsg.ConfigSourceDefaultConfig},
			},
			"2": {
				"num.replica.fetchers": {"2", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
				"log.segment.bytes":    {"2097152", kmsg.ConfigSourceDynamicBrokerConfig},
				"log.cleaner.threads":  {"2", kmsg.ConfigSourceDynamicBrokerConfig},
			},
		}
		for _, rc := range described {
			if rc.Err != nil {
				t.Fatalf("%s: describe broker %s: %v", when, rc.Name, rc.Err)
			}
			for _, c := range rc.Configs {
				w, ok := want[rc.Name][c.Key]
				if !ok {
					continue
				}
				if c.MaybeValue() != w.value || c.Source != w.source {
					t.Fatalf("%s: broker %s %s = %q from %v, want %q from %v", when, rc.Name, c.Key, c.MaybeValue(), c.Source, w.value, w.source)
				}
				delete(want[rc.Name], c.Key)
			}
		}
		for name, left := range want {
			if len(left) != 0 {
				t.Fatalf("%s: broker %s did not describe %v", when, name, left)
			}
		}
	}
	check("before the restart")
	bs[1].Restart()
	waitUntil(t, "broker 2 back in the ISR", 30*time.Second, func() bool {
		for _, replicas := range isr(t, adm, topic) {
			if len(replicas) != 2 {
				return false
			}
		}
		return true
	})
	check("after broker 2 restarted")
	produce(5)
}

// pythonBrokerConfigs changes broker 1's dynamic configs with
// kafka-python's legacy alter_configs (first a dynamic set, then one with
// a static key) and prints the error codes and the described entries of
// some keys, as JSON.
const pythonBrokerConfigs = `
import sys, json
from kafka.admin import KafkaAdminClient, ConfigResource, ConfigResourceType

adm = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=30000)
def alter(configs):
    r = adm.alter_configs([ConfigResource(ConfigResourceType.BROKER, '1', configs=configs)])
    return [[res[0], res[1]] for res in r.resources]
out = {
    'dynamic': alter({'log.cleaner.backoff.ms': '1000', 'log.retention.bytes': '1073741824'}),
    'static': alter({'log.cleaner.backoff.ms': '2000', 'broker.rack': 'r1'}),
}
entries = {}
for resp in adm.describe_configs([ConfigResource(ConfigResourceType.BROKER, '1')], include_synonyms=True):
    for res in resp.resources:
        for e in res[4]:
            entries[e[0]] = {'value': e[1], 'read_only': e[2], 'source': e[3], 'synonyms': [[s[0], s[1], s[2]] for s in e[5]]}
out['described'] = {k: entries[k] for k in ('log.cleaner.backoff.ms', 'log.retention.bytes', 'broker.rack')}
adm.close()
print(json.dumps(out))
`

// TestDynamicBrokerConfigsKafkaPython: kafka-python's alter_configs
// (legacy AlterConfigs) sets broker 1's dynamic configs, refuses a set
// with a static key as a whole, and describe_configs reports the sources
// and synonyms; a topic without an override takes the new
// log.retention.bytes.
func TestDynamicBrokerConfigsKafkaPython(t *testing.T) {
	b := harness.Start(t, nil)
	harness.CreateTopic(t, b.Admin(), "dyn-python", 1, nil)
	var out struct {
		Dynamic   [][]any `json:"dynamic"`
		Static    [][]any `json:"static"`
		Described map[string]struct {
			Value    *string `json:"value"`
			ReadOnly bool    `json:"read_only"`
			Source   int     `json:"source"`
			Synonyms [][]any `json:"synonyms"`
		} `json:"described"`
	}
	raw := harness.Python(t, pythonBrokerConfigs, b.Addr())
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("kafka-python output %q: %v", raw, err)
	}
	if len(out.Dynamic) != 1 || out.Dynamic[0][0] != 0.0 {
		t.Fatalf("alter_configs of dynamic keys: %v", out.Dynamic)
	}
	if len(out.Static) != 1 || out.Static[0][0] != float64(kerr.InvalidRequest.Code) || !strings.Contains(out.Static[0][1].(string), "Set(broker.rack)") {
		t.Fatalf("alter_configs with a static key: %v, want INVALID_REQUEST naming broker.rack", out.Static)
	}
	d := out.Described
	if e := d["log.cleaner.backoff.ms"]; e.Value == nil || *e.Value != "1000" || e.Source != int(kmsg.ConfigSourceDynamicBrokerConfig) || e.ReadOnly {
		t.Fatalf("log.cleaner.backoff.ms described as %+v", e)
	}
	if e := d["log.retention.bytes"]; e.Value == nil || *e.Value != "1073741824" || len(e.Synonyms) != 2 || e.Synonyms[1][2] != float64(kmsg.ConfigSourceDefaultConfig) {
		t.Fatalf("log.retention.bytes described as %+v", e)
	}
	if e := d["broker.rack"]; !e.ReadOnly || e.Source != int(kmsg.ConfigSourceDefaultConfig) {
		t.Fatalf("broker.rack described as %+v", e)
	}
	rcs, err := b.Admin().DescribeTopicConfigs(testCtx(t), "dyn-python")
	if err != nil || len(rcs) != 1 {
		t.Fatalf("describe topic: %v", err)
	}
	for _, c := range rcs[0].Configs {
		if c.Key == "retention.bytes" && (c.MaybeValue() != "1073741824" || c.Source != kmsg.ConfigSourceDynamicBrokerConfig) {
			t.Fatalf("topic retention.bytes = %q from %v", c.MaybeValue(), c.Source)
		}
	}
}
