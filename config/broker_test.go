package config

import (
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDefaults(t *testing.T) {
	b := Default()
	checks := []struct {
		name      string
		got, want any
	}{
		{"NodeID", b.NodeID, int32(1)},
		{"Listeners", b.Listeners, []string{"PLAINTEXT://127.0.0.1:9092"}},
		{"AdvertisedListeners", b.AdvertisedListeners, []string{"PLAINTEXT://127.0.0.1:9092"}},
		{"KafkaListeners", b.KafkaListeners, []Listener{{Name: "PLAINTEXT", Addr: "127.0.0.1:9092", Protocol: "PLAINTEXT", Advertised: "127.0.0.1:9092"}}},
		{"InterBrokerListenerName", b.InterBrokerListenerName, "PLAINTEXT"},
		{"LogDirs", b.LogDirs, []string{"/tmp/strata-logs"}},
		{"NumPartitions", b.NumPartitions, int32(1)},
		{"DefaultReplicationFactor", b.DefaultReplicationFactor, int16(1)},
		{"AutoCreateTopics", b.AutoCreateTopics, true},
		{"MessageMaxBytes", b.MessageMaxBytes, int32(1048588)},
		{"SocketRequestMaxBytes", b.SocketRequestMaxBytes, int32(104857600)},
		{"EtcdEndpoints", b.EtcdEndpoints, []string(nil)},
		{"EtcdPrefix", b.EtcdPrefix, "/strata"},
		{"MetricsListener", b.MetricsListener, "127.0.0.1:9644"},
		{"LogLevel", b.LogLevel, slog.LevelInfo},
		{"Rack", b.Rack, ""},
		{"BrokerSessionTimeoutMs", b.BrokerSessionTimeoutMs, int64(9000)},
		{"MaxConnections", b.MaxConnections, int32(math.MaxInt32)},
		{"MaxConnectionsPerIP", b.MaxConnectionsPerIP, int32(math.MaxInt32)},
		{"MaxConnectionsPerIPOverrides", b.MaxConnectionsPerIPOverrides, map[string]int32{}},
		{"ConnectionsMaxIdleMs", b.ConnectionsMaxIdleMs, int64(600000)},
		{"QueuedMaxRequestBytes", b.QueuedMaxRequestBytes, int64(256 << 20)},
		{"LogSegmentBytes", b.LogSegmentBytes, int64(1 << 30)},
		{"LogRollMs", b.LogRollMs, int64(168 * 3600 * 1000)},
		{"LogRollJitterMs", b.LogRollJitterMs, int64(0)},
		{"LogIndexIntervalBytes", b.LogIndexIntervalBytes, int32(4096)},
		{"LogFlushIntervalMessages", b.LogFlushIntervalMessages, int64(math.MaxInt64)},
		{"LogFlushIntervalMs", b.LogFlushIntervalMs, int64(-1)},
		{"LogRetentionMs", b.LogRetentionMs, int64(168 * 3600 * 1000)},
		{"LogRetentionBytes", b.LogRetentionBytes, int64(-1)},
		{"LogRetentionCheckIntervalMs", b.LogRetentionCheckIntervalMs, int64(300000)},
		{"LogCleanupPolicy", b.LogCleanupPolicy, "delete"},
		{"LogMessageTimestampType", b.LogMessageTimestampType, "CreateTime"},
		{"MinInsyncReplicas", b.MinInsyncReplicas, int32(1)},
		{"LogLocalRetentionMs", b.LogLocalRetentionMs, int64(-2)},
		{"LogLocalRetentionBytes", b.LogLocalRetentionBytes, int64(-2)},
		{"RemoteLogStorageSystemEnable", b.RemoteLogStorageSystemEnable, false},
		{"RemoteLogStorageBackend", b.RemoteLogStorageBackend, "local"},
		{"RemoteLogStorageLocalDir", b.RemoteLogStorageLocalDir, "/tmp/strata-logs/tier-store"},
		{"EtcdDir", b.EtcdDir, "/tmp/strata-logs/etcd"},
		{"EtcdQuotaBackendBytes", b.EtcdQuotaBackendBytes, int64(2 << 30)},
		{"EtcdReserveBytes", b.EtcdReserveBytes, int64(128 << 20)},
		{"RemoteLogStorageS3.Region", b.RemoteLogStorageS3.Region, "us-east-1"},
		{"GroupInitialRebalanceDelayMs", b.GroupInitialRebalanceDelayMs, int64(3000)},
		{"OffsetsTopicNumPartitions", b.OffsetsTopicNumPartitions, int32(50)},
		{"OffsetsTopicReplicationFactor", b.OffsetsTopicReplicationFactor, int16(1)},
		{"OffsetMetadataMaxBytes", b.OffsetMetadataMaxBytes, int32(4096)},
		{"OffsetsCommitTimeoutMs", b.OffsetsCommitTimeoutMs, int64(5000)},
		{"LogCleanerMinCleanableRatio", b.LogCleanerMinCleanableRatio, 0.5},
		{"LogCleanerIOMaxBytesPerSecond", b.LogCleanerIOMaxBytesPerSecond, math.MaxFloat64},
		{"CompressionType", b.CompressionType, "producer"},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	for _, k := range BrokerKeys() {
		if got := b.Source(k); got != SourceDefault {
			t.Errorf("Source(%q) = %d, want default", k, got)
		}
	}
	if b.Source("nope") != SourceUnknown {
		t.Errorf("Source of an unknown key should be SourceUnknown")
	}
	if _, ok := b.Raw["log.retention.minutes"]; ok {
		t.Errorf("Raw holds unset optional key log.retention.minutes")
	}
	for k, want := range map[string]string{
		"listeners":             "PLAINTEXT://127.0.0.1:9092",
		"advertised.listeners":  "PLAINTEXT://127.0.0.1:9092",
		"log.dirs":              "/tmp/strata-logs",
		"log.retention.ms":      "604800000",
		"log.flush.interval.ms": "-1",
		"log.level":             "info",
	} {
		if b.Raw[k] != want {
			t.Errorf("Raw[%q] = %q, want %q", k, b.Raw[k], want)
		}
	}
}

func TestParseValues(t *testing.T) {
	tests := []struct {
		name  string
		set   map[string]string
		check func(b *Broker) bool
	}{
		{"listener list", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092, ssl://[::1]:9093"},
			func(b *Broker) bool {
				return reflect.DeepEqual(b.Listeners, []string{"PLAINTEXT://127.0.0.1:9092", "SSL://[::1]:9093"}) &&
					reflect.DeepEqual(b.AdvertisedListeners, b.Listeners) && b.KafkaListeners[1].Protocol == ProtocolSSL &&
					b.KafkaListeners[1].Advertised == "[::1]:9093"
			}},
		{"bare host:port is PLAINTEXT", map[string]string{"listeners": ":0"},
			func(b *Broker) bool { return reflect.DeepEqual(b.Listeners, []string{"PLAINTEXT://:0"}) }},
		{"advertised separate", map[string]string{"advertised.listeners": "PLAINTEXT://example.com:19092"},
			func(b *Broker) bool {
				return b.KafkaListeners[0].Advertised == "example.com:19092" && b.KafkaListeners[0].Addr == "127.0.0.1:9092"
			}},
		{"named listeners", map[string]string{
			"listeners":                      "CLIENT://:9092,internal://127.0.0.1:9093,EXTRA://:9094",
			"advertised.listeners":           "CLIENT://kafka.example.com:9092,INTERNAL://10.0.0.1:9093",
			"listener.security.protocol.map": "CLIENT:SSL,INTERNAL:PLAINTEXT,EXTRA:SASL_SSL",
			"sasl.enabled.mechanisms":        "PLAIN",
			"inter.broker.listener.name":     "internal",
		}, func(b *Broker) bool {
			return reflect.DeepEqual(b.KafkaListeners, []Listener{
				{Name: "CLIENT", Addr: ":9092", Protocol: ProtocolSSL, Advertised: "kafka.example.com:9092"},
				{Name: "INTERNAL", Addr: "127.0.0.1:9093", Protocol: ProtocolPlaintext, Advertised: "10.0.0.1:9093"},
				{Name: "EXTRA", Addr: ":9094", Protocol: ProtocolSASLSSL},
			}) && b.InterBrokerListener().Name == "INTERNAL"
		}},
		{"inter-broker by protocol", map[string]string{"listeners": "PLAINTEXT://:9092,SSL://:9093", "security.inter.broker.protocol": "SSL"},
			func(b *Broker) bool { return b.InterBrokerListener().Protocol == ProtocolSSL }},
		{"per-listener ssl", map[string]string{
			"listeners":                        "A://:1,B://:2",
			"listener.security.protocol.map":   "A:SSL,B:SSL",
			"inter.broker.listener.name":       "A",
			"ssl.client.auth":                  "required",
			"ssl.keystore.location":            "/k.pem",
			"listener.name.b.ssl.client.auth":  "none",
			"listener.name.b.ssl.key.password": "secret",
		}, func(b *Broker) bool {
			a, bb := b.SSLFor("A"), b.SSLFor("B")
			return a.ClientAuth == "required" && bb.ClientAuth == "none" && bb.KeystoreLocation == "/k.pem" &&
				bb.KeyPassword == "secret" && a.KeyPassword == ""
		}},
		{"log.dir fallback", map[string]string{"log.dir": "/d"},
			func(b *Broker) bool {
				return b.LogDirs[0] == "/d" && b.RemoteLogStorageLocalDir == "/d/tier-store" && b.EtcdDir == "/d/etcd"
			}},
		{"etcd dir of its own", map[string]string{"log.dir": "/d", "metadata.etcd.dir": "/m"},
			func(b *Broker) bool { return b.EtcdDir == "/m" }},
		{"log.dirs wins", map[string]string{"log.dir": "/d", "log.dirs": "/a, /b"},
			func(b *Broker) bool { return reflect.DeepEqual(b.LogDirs, []string{"/a", "/b"}) }},
		{"roll hours", map[string]string{"log.roll.hours": "2"},
			func(b *Broker) bool { return b.LogRollMs == 2*hourMs }},
		{"roll ms wins", map[string]string{"log.roll.hours": "2", "log.roll.ms": "100"},
			func(b *Broker) bool { return b.LogRollMs == 100 }},
		{"retention hours", map[string]string{"log.retention.hours": "1"},
			func(b *Broker) bool { return b.LogRetentionMs == hourMs }},
		{"retention minutes beat hours", map[string]string{"log.retention.hours": "1", "log.retention.minutes": "3"},
			func(b *Broker) bool { return b.LogRetentionMs == 3*minuteMs && b.Raw["log.retention.minutes"] == "3" }},
		{"retention ms beats all", map[string]string{"log.retention.hours": "1", "log.retention.minutes": "3", "log.retention.ms": "5"},
			func(b *Broker) bool { return b.LogRetentionMs == 5 }},
		{"negative retention is unlimited", map[string]string{"log.retention.hours": "-5"},
			func(b *Broker) bool { return b.LogRetentionMs == -1 && b.Raw["log.retention.ms"] == "-1" }},
		{"flush ms set", map[string]string{"log.flush.interval.ms": "1000"},
			func(b *Broker) bool { return b.LogFlushIntervalMs == 1000 }},
		{"smallest segment", map[string]string{"log.segment.bytes": "14"},
			func(b *Broker) bool { return b.LogSegmentBytes == 14 }},
		{"etcd endpoints", map[string]string{"metadata.etcd.endpoints": "127.0.0.1:2379,http://127.0.0.1:2380"},
			func(b *Broker) bool {
				return reflect.DeepEqual(b.EtcdEndpoints, []string{"127.0.0.1:2379", "http://127.0.0.1:2380"})
			}},
		{"metrics disabled", map[string]string{"metrics.listener": ""},
			func(b *Broker) bool { return b.MetricsListener == "" }},
		{"log level", map[string]string{"log.level": "DEBUG"},
			func(b *Broker) bool { return b.LogLevel == slog.LevelDebug && b.Raw["log.level"] == "debug" }},
		{"booleans any case", map[string]string{"auto.create.topics.enable": "FALSE"},
			func(b *Broker) bool { return !b.AutoCreateTopics && b.Raw["auto.create.topics.enable"] == "false" }},
		{"enum canonical", map[string]string{"log.message.timestamp.type": "logappendtime", "log.cleanup.policy": "compact, delete"},
			func(b *Broker) bool {
				return b.LogMessageTimestampType == "LogAppendTime" && b.LogCleanupPolicy == "compact,delete"
			}},
		{"values trimmed", map[string]string{"node.id": "  7 "},
			func(b *Broker) bool { return b.NodeID == 7 && b.Raw["node.id"] == "7" }},
		{"tiering with s3", map[string]string{"remote.log.storage.system.enable": "true", "remote.log.storage.backend": "s3",
			"remote.log.storage.s3.bucket": "b", "remote.log.storage.s3.endpoint": "http://127.0.0.1:9000", "remote.log.storage.s3.path.style": "true"},
			func(b *Broker) bool {
				return b.RemoteLogStorageS3 == S3Config{Bucket: "b", Endpoint: "http://127.0.0.1:9000", Region: "us-east-1", PathStyle: true}
			}},
		{"local retention within total", map[string]string{"remote.log.storage.system.enable": "true", "log.retention.ms": "1000", "log.local.retention.ms": "500"},
			func(b *Broker) bool { return b.LogLocalRetentionMs == 500 }},
		{"connection overrides", map[string]string{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": " broker-2:100 , 127.0.0.1:200,::1:3"},
			func(b *Broker) bool {
				return b.MaxConnectionsPerIP == 0 && reflect.DeepEqual(b.MaxConnectionsPerIPOverrides, map[string]int32{"broker-2": 100, "127.0.0.1": 200, "::1": 3}) &&
					b.Raw["max.connections.per.ip.overrides"] == "127.0.0.1:200,::1:3,broker-2:100"
			}},
		{"no idle timeout, unbounded request bytes", map[string]string{"connections.max.idle.ms": "-1", "queued.max.request.bytes": "-1"},
			func(b *Broker) bool { return b.ConnectionsMaxIdleMs == -1 && b.QueuedMaxRequestBytes == -1 }},
		{"local retention unchecked without tiering", map[string]string{"log.retention.ms": "1000", "log.local.retention.ms": "5000"},
			func(b *Broker) bool { return b.LogLocalRetentionMs == 5000 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Parse(tc.set)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !tc.check(b) {
				t.Fatalf("unexpected config: %+v", b)
			}
			for k := range tc.set {
				if b.Source(k) != SourceStaticBroker {
					t.Errorf("Source(%q) = %d, want static", k, b.Source(k))
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		set     map[string]string
		kind    error
		message string
	}{
		{map[string]string{"log.segement.bytes": "1"}, ErrUnknownKey, `config: unknown key "log.segement.bytes" (did you mean "log.segment.bytes"?)`},
		{map[string]string{"zzzz": "1"}, ErrUnknownKey, `config: unknown key "zzzz"`},
		{map[string]string{"log.segment.bytes": "abc"}, ErrInvalidValue, `config: log.segment.bytes: invalid integer "abc"`},
		{map[string]string{"log.segment.bytes": "13"}, ErrInvalidValue, `config: log.segment.bytes: value 13 must be at least 14`},
		{map[string]string{"log.segment.bytes": "4294967296"}, ErrInvalidValue, `config: log.segment.bytes: value 4294967296 must be at most 2147483647`},
		{map[string]string{"node.id": ""}, ErrInvalidValue, `config: node.id: invalid integer ""`},
		{map[string]string{"node.id": "-1"}, ErrInvalidValue, "node.id: value -1 must be at least 0"},
		{map[string]string{"default.replication.factor": "40000"}, ErrInvalidValue, "default.replication.factor: value 40000 must be at most 32767"},
		{map[string]string{"num.partitions": "0"}, ErrInvalidValue, "num.partitions"},
		{map[string]string{"auto.create.topics.enable": "yes"}, ErrInvalidValue, `auto.create.topics.enable: invalid boolean "yes"`},
		{map[string]string{"listeners": "SSL://127.0.0.1:9093"}, ErrInvalidValue, "security.inter.broker.protocol: the inter-broker listener PLAINTEXT must be a listener name defined in advertised.listeners (SSL)"},
		{map[string]string{"listeners": "127.0.0.1"}, ErrInvalidValue, "invalid address"},
		{map[string]string{"listeners": "127.0.0.1:99999"}, ErrInvalidValue, "invalid port"},
		{map[string]string{"listeners": "PLAINTEXT://:1,PLAINTEXT://:2"}, ErrInvalidValue, "listeners: each listener must have a different name"},
		{map[string]string{"listeners": "PLAINTEXT://:1,SSL://:1"}, ErrInvalidValue, "listeners: each listener must have a different port"},
		{map[string]string{"listeners": "CLIENT://:1"}, ErrInvalidValue, "no security protocol defined for listener CLIENT"},
		{map[string]string{"listener.security.protocol.map": "PLAINTEXT:TLS"}, ErrInvalidValue, "listener.security.protocol.map: listener PLAINTEXT: invalid value"},
		{map[string]string{"advertised.listeners": "SSL://:1"}, ErrInvalidValue, "advertised.listeners: listener SSL is not in listeners"},
		{map[string]string{"listeners": "PLAINTEXT://:1,SSL://:2", "inter.broker.listener.name": "SSL", "security.inter.broker.protocol": "PLAINTEXT"}, ErrInvalidValue,
			"only one of inter.broker.listener.name and security.inter.broker.protocol should be set"},
		{map[string]string{"listener.name.ssl.ssl.client.auth": "none"}, ErrInvalidValue, "listener SSL is not in listeners"},
		{map[string]string{"listener.name.plaintext.ssl.client.auth": "maybe"}, ErrInvalidValue, "listener.name.plaintext.ssl.client.auth: invalid value"},
		{map[string]string{"listener.name.plaintext.num.partitions": "3"}, ErrUnknownKey, "unknown key"},
		{map[string]string{"ssl.enabled.protocols": "TLSv1.2,SSLv3"}, ErrInvalidValue, "unknown protocol"},
		{map[string]string{"ssl.cipher.suites": "TLS_FOO"}, ErrInvalidValue, "unknown cipher suite"},
		{map[string]string{"ssl.principal.mapping.rules": "default"}, ErrInvalidValue, "ssl.principal.mapping.rules: invalid rule"},
		{map[string]string{"listeners": ""}, ErrInvalidValue, "listeners: must name at least one listener"},
		{map[string]string{"listeners": "a:1,,b:2"}, ErrInvalidValue, "listeners: empty item"},
		{map[string]string{"log.dirs": ""}, ErrInvalidValue, "log.dirs: must name at least one directory"},
		{map[string]string{"replica.fetch.wait.max.ms": "40000"}, ErrInvalidValue, "replica.fetch.wait.max.ms: 40000 exceeds replica.lag.time.max.ms (30000)"},
		{map[string]string{"log.dir": ""}, ErrInvalidValue, "log.dir: must not be empty"},
		{map[string]string{"metadata.etcd.endpoints": "ftp://x:1"}, ErrInvalidValue, "metadata.etcd.endpoints: invalid endpoint"},
		{map[string]string{"metadata.etcd.prefix": "strata/"}, ErrInvalidValue, "metadata.etcd.prefix: invalid prefix"},
		{map[string]string{"metrics.listener": "nope"}, ErrInvalidValue, "metrics.listener: invalid address"},
		{map[string]string{"log.level": "loud"}, ErrInvalidValue, `log.level: invalid log level "loud"`},
		{map[string]string{"log.cleanup.policy": "shred"}, ErrInvalidValue, `log.cleanup.policy: invalid value "shred"`},
		{map[string]string{"compression.type": "brotli"}, ErrInvalidValue, "compression.type"},
		{map[string]string{"log.cleaner.min.cleanable.ratio": "1.5"}, ErrInvalidValue, "log.cleaner.min.cleanable.ratio: value 1.5 must be between 0 and 1"},
		{map[string]string{"log.cleaner.min.cleanable.ratio": "NaN"}, ErrInvalidValue, "invalid number"},
		{map[string]string{"log.flush.interval.ms": "-2"}, ErrInvalidValue, "log.flush.interval.ms"},
		{map[string]string{"log.roll.ms": "0"}, ErrInvalidValue, "log.roll.ms"},
		{map[string]string{"remote.log.storage.backend": "gcs"}, ErrInvalidValue, "remote.log.storage.backend"},
		{map[string]string{"remote.log.storage.s3.endpoint": "127.0.0.1:9000"}, ErrInvalidValue, "remote.log.storage.s3.endpoint: invalid URL"},
		{map[string]string{"remote.log.storage.system.enable": "true", "remote.log.storage.backend": "s3"}, ErrInvalidValue, "remote.log.storage.s3.bucket: must be set"},
		{map[string]string{"remote.log.storage.system.enable": "true", "log.retention.ms": "1000", "log.local.retention.ms": "2000"},
			ErrInvalidValue, "log.local.retention.ms: 2000 must not be more than log.retention.ms 1000"},
		{map[string]string{"remote.log.storage.system.enable": "true", "log.retention.bytes": "1000", "log.local.retention.bytes": "-1"},
			ErrInvalidValue, "log.local.retention.bytes: must not be -1"},
		{map[string]string{"max.connections.per.ip": "0"}, ErrInvalidValue, "max.connections.per.ip: can be set to zero only if max.connections.per.ip.overrides is set"},
		{map[string]string{"max.connections.per.ip.overrides": "host"}, ErrInvalidValue, `max.connections.per.ip.overrides: invalid override "host": want host:count`},
		{map[string]string{"max.connections.per.ip.overrides": ":5"}, ErrInvalidValue, "empty host"},
		{map[string]string{"max.connections.per.ip.overrides": "a:-1"}, ErrInvalidValue, `override "a:-1": value -1 must be at least 0`},
		{map[string]string{"max.connections": "-1"}, ErrInvalidValue, "max.connections: value -1 must be at least 0"},
		{map[string]string{"group.min.session.timeout.ms": "10", "group.max.session.timeout.ms": "5"}, ErrInvalidValue, "group.min.session.timeout.ms: 10 exceeds"},
	}
	for _, tc := range tests {
		_, err := Parse(tc.set)
		if err == nil {
			t.Errorf("Parse(%v) succeeded, want error %q", tc.set, tc.message)
			continue
		}
		if !errors.Is(err, tc.kind) {
			t.Errorf("Parse(%v) = %v, want kind %v", tc.set, err, tc.kind)
		}
		var ke *KeyError
		if !errors.As(err, &ke) {
			t.Errorf("Parse(%v) error %T is not a *KeyError", tc.set, err)
		}
		if !strings.Contains(err.Error(), tc.message) {
			t.Errorf("Parse(%v) = %q, want it to contain %q", tc.set, err, tc.message)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server.properties")
	file := `# example
node.id=3
listeners = PLAINTEXT://127.0.0.1:0
log.dirs: ` + dir + `/logs
log.segment.bytes 16384
log.retention.hours=1
`
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Load(path, []string{"node.id=4", "log.roll.ms = 100", "metrics.listener="})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if b.NodeID != 4 || b.Listeners[0] != "PLAINTEXT://127.0.0.1:0" || b.LogDirs[0] != dir+"/logs" ||
		b.LogSegmentBytes != 16384 || b.LogRollMs != 100 || b.LogRetentionMs != hourMs || b.MetricsListener != "" {
		t.Fatalf("unexpected config %+v", b)
	}

	noFile, err := Load("", []string{"node.id=9"})
	if err != nil || noFile.NodeID != 9 {
		t.Fatalf("Load without a file = %v, %v", noFile, err)
	}

	tests := []struct {
		file      string
		overrides []string
		want      string
	}{
		{"a=1\nlog.segement.bytes=5\n", nil, `config: unknown key "a" [server.properties:1]`},
		{"node.id=1\nlog.segment.bytes=abc\n", nil, `config: log.segment.bytes: invalid integer "abc" [server.properties:2]`},
		{"node.id=1\n", []string{"node.id=x"}, `config: node.id: invalid integer "x" [--set]`},
		{"", []string{"node.id"}, `config: --set "node.id": want key=value`},
		{"", []string{"=1"}, `config: --set "=1": want key=value`},
		{"a=\\u00", nil, `/server.properties: line 1: key "a": malformed \u escape`},
	}
	for _, tc := range tests {
		if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path, tc.overrides)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%q, %q) = %v, want %q", tc.file, tc.overrides, err, tc.want)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.properties"), nil); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Load of a missing file = %v", err)
	}
}

func TestKeyTable(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range brokerKeys {
		if seen[d.name] {
			t.Errorf("broker key %q defined twice", d.name)
		}
		seen[d.name] = true
		if d.doc == "" || d.typ == TypeUnknown || d.f.set == nil || d.f.get == nil {
			t.Errorf("broker key %q is incomplete", d.name)
		}
		if d.kind != keyDefault && d.def != "" {
			t.Errorf("broker key %q has a default but is derived or optional", d.name)
		}
		for _, s := range d.synonyms {
			if _, ok := brokerIndex[s]; !ok {
				t.Errorf("broker key %q falls back to unknown key %q", d.name, s)
			}
		}
	}
	for _, d := range topicKeys {
		if seen["topic:"+d.name] {
			t.Errorf("topic key %q defined twice", d.name)
		}
		seen["topic:"+d.name] = true
		if d.doc == "" || d.typ == TypeUnknown || d.f.set == nil || d.f.get == nil {
			t.Errorf("topic key %q is incomplete", d.name)
		}
		if d.broker != "" {
			if _, ok := brokerIndex[d.broker]; !ok {
				t.Errorf("topic key %q inherits from unknown broker key %q", d.name, d.broker)
			}
		}
	}
	// Every canonical value reparses to itself.
	b := Default()
	b2, err := Parse(b.Raw)
	if err != nil {
		t.Fatalf("reparsing Raw: %v", err)
	}
	if !reflect.DeepEqual(b.Raw, b2.Raw) {
		t.Errorf("Raw does not round-trip:\n%v\n%v", b.Raw, b2.Raw)
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "abc", 0}, {"abc", "abd", 1}, {"abc", "", 3}, {"kitten", "sitting", 3},
		{"log.segement.bytes", "log.segment.bytes", 1},
	}
	for _, tc := range tests {
		if got := editDistance(tc.a, tc.b, 100); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	if got := editDistance("aaaaaaaa", "bbbbbbbb", 3); got != 3 {
		t.Errorf("limit not applied: %d", got)
	}
}

// The example configuration of `make run` must always load.
func TestExampleConfigLoads(t *testing.T) {
	b, err := Load(filepath.Join("..", "deploy", "server.properties"), nil)
	if err != nil {
		t.Fatalf("deploy/server.properties: %v", err)
	}
	if b.Listeners[0] != "PLAINTEXT://127.0.0.1:9092" || len(b.EtcdEndpoints) != 0 || b.LogDirs[0] != "./data/strata-logs" {
		t.Fatalf("example config is not the zero-setup single broker: %+v", b)
	}
}
