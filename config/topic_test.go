package config

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func mustParse(t *testing.T, set map[string]string) *Broker {
	t.Helper()
	b, err := Parse(set)
	if err != nil {
		t.Fatalf("Parse(%v): %v", set, err)
	}
	return b
}

func TestResolveTopicDefaults(t *testing.T) {
	got, err := Default().ResolveTopic(nil)
	if err != nil {
		t.Fatal(err)
	}
	week := int64(7 * 24 * hourMs)
	want := Topic{
		SegmentBytes: 1 << 30, SegmentMs: week, SegmentIndexBytes: 10485760,
		RetentionMs: week, RetentionBytes: -1, LocalRetentionMs: -2, LocalRetentionBytes: -2,
		DeleteRetentionMs: 86400000, MaxCompactionLagMs: math.MaxInt64, IndexIntervalBytes: 4096,
		FlushMessages: math.MaxInt64, FlushMs: -1, FileDeleteDelayMs: 60000,
		MessageTimestampDifferenceMaxMs: math.MaxInt64, MessageTimestampBeforeMaxMs: math.MaxInt64, MessageTimestampAfterMaxMs: math.MaxInt64,
		MaxMessageBytes: 1048588, MinInsyncReplicas: 1,
		CleanupPolicy: "delete", Delete: true, MessageTimestampType: "CreateTime", CompressionType: "producer",
		MinCleanableDirtyRatio: 0.5,
	}
	if got != want {
		t.Fatalf("ResolveTopic(nil):\n got %+v\nwant %+v", got, want)
	}
}

func TestResolveTopicInheritsBroker(t *testing.T) {
	b := mustParse(t, map[string]string{
		"log.segment.bytes": "16384", "log.roll.hours": "1", "log.retention.minutes": "10",
		"message.max.bytes": "2000", "log.message.timestamp.type": "LogAppendTime", "log.cleanup.policy": "compact",
		"log.flush.interval.ms": "50", "unclean.leader.election.enable": "true",
	})
	got, err := b.ResolveTopic(map[string]string{"segment.bytes": "20000"})
	if err != nil {
		t.Fatal(err)
	}
	if got.SegmentBytes != 20000 || got.SegmentMs != hourMs || got.RetentionMs != 10*minuteMs || got.MaxMessageBytes != 2000 ||
		!got.LogAppendTime || got.MessageTimestampType != "LogAppendTime" || !got.Compact || got.Delete ||
		got.FlushMs != 50 || !got.UncleanLeaderElection {
		t.Fatalf("unexpected topic config %+v", got)
	}
}

func TestResolveTopicOverrides(t *testing.T) {
	tests := []struct {
		name      string
		overrides map[string]string
		check     func(Topic) bool
	}{
		{"small segments", map[string]string{"segment.bytes": "16384", "segment.ms": "100"},
			func(c Topic) bool { return c.SegmentBytes == 16384 && c.SegmentMs == 100 }},
		{"kafka minimum segment", map[string]string{"segment.bytes": "14"}, func(c Topic) bool { return c.SegmentBytes == 14 }},
		{"retention", map[string]string{"retention.ms": "-1", "retention.bytes": "1048576"},
			func(c Topic) bool { return c.RetentionMs == -1 && c.RetentionBytes == 1048576 }},
		{"compact and delete", map[string]string{"cleanup.policy": "compact,delete"},
			func(c Topic) bool { return c.Compact && c.Delete && c.CleanupPolicy == "compact,delete" }},
		{"empty policy", map[string]string{"cleanup.policy": ""}, func(c Topic) bool { return !c.Compact && !c.Delete }},
		{"log append time", map[string]string{"message.timestamp.type": "LogAppendTime"},
			func(c Topic) bool { return c.LogAppendTime }},
		{"max message", map[string]string{"max.message.bytes": "100"}, func(c Topic) bool { return c.MaxMessageBytes == 100 }},
		{"min isr", map[string]string{"min.insync.replicas": "2"}, func(c Topic) bool { return c.MinInsyncReplicas == 2 }},
		{"compression", map[string]string{"compression.type": "ZSTD"}, func(c Topic) bool { return c.CompressionType == "zstd" }},
		{"dirty ratio", map[string]string{"min.cleanable.dirty.ratio": "0.01"}, func(c Topic) bool { return c.MinCleanableDirtyRatio == 0.01 }},
		{"tiered", map[string]string{"remote.storage.enable": "true", "retention.ms": "10000", "local.retention.ms": "1000",
			"retention.bytes": "100000", "local.retention.bytes": "100000"},
			func(c Topic) bool {
				return c.RemoteStorageEnable && c.LocalRetentionMs == 1000 && c.LocalRetentionBytes == 100000
			}},
		{"tiered, local follows total", map[string]string{"remote.storage.enable": "true", "retention.ms": "10000"},
			func(c Topic) bool { return c.LocalRetentionMs == -2 }},
		{"tiered, total unlimited", map[string]string{"remote.storage.enable": "true", "retention.ms": "-1", "local.retention.ms": "-1"},
			func(c Topic) bool { return c.LocalRetentionMs == -1 }},
		{"local retention unchecked when not tiered", map[string]string{"retention.ms": "10", "local.retention.ms": "1000"},
			func(c Topic) bool { return c.LocalRetentionMs == 1000 }},
		{"KIP-950 flags", map[string]string{"remote.log.copy.disable": "true", "remote.log.delete.on.disable": "true"},
			func(c Topic) bool { return c.RemoteLogCopyDisable && c.RemoteLogDeleteOnDisable }},
		{"trimmed", map[string]string{"segment.ms": " 100 "}, func(c Topic) bool { return c.SegmentMs == 100 }},
	}
	b := Default()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := b.ResolveTopic(tc.overrides)
			if err != nil {
				t.Fatalf("ResolveTopic: %v", err)
			}
			if !tc.check(c) {
				t.Fatalf("unexpected topic config %+v", c)
			}
			if err := ValidateTopicConfigs(tc.overrides); err != nil {
				t.Fatalf("ValidateTopicConfigs: %v", err)
			}
		})
	}
}

func TestTopicErrors(t *testing.T) {
	tests := []struct {
		overrides map[string]string
		kind      error
		message   string
	}{
		{map[string]string{"retention.msx": "1"}, ErrUnknownKey, `config: unknown key "retention.msx" (did you mean "retention.ms"?)`},
		{map[string]string{"log.retention.ms": "1"}, ErrUnknownKey, `unknown key "log.retention.ms"`},
		{map[string]string{"b.unknown": "1", "a.unknown": "1"}, ErrUnknownKey, `unknown key "a.unknown"`},
		{map[string]string{"segment.bytes": "abc"}, ErrInvalidValue, `config: segment.bytes: invalid integer "abc"`},
		{map[string]string{"segment.bytes": "13"}, ErrInvalidValue, "segment.bytes: value 13 must be at least 14"},
		{map[string]string{"segment.bytes": "2147483648"}, ErrInvalidValue, "segment.bytes: value 2147483648 must be at most 2147483647"},
		{map[string]string{"segment.ms": "0"}, ErrInvalidValue, "segment.ms"},
		{map[string]string{"retention.ms": "-2"}, ErrInvalidValue, "retention.ms"},
		{map[string]string{"local.retention.ms": "-3"}, ErrInvalidValue, "local.retention.ms"},
		{map[string]string{"cleanup.policy": "compact,shred"}, ErrInvalidValue, `cleanup.policy: invalid value "shred"`},
		{map[string]string{"message.timestamp.type": "Now"}, ErrInvalidValue, "message.timestamp.type"},
		{map[string]string{"max.message.bytes": "-1"}, ErrInvalidValue, "max.message.bytes"},
		{map[string]string{"min.insync.replicas": "0"}, ErrInvalidValue, "min.insync.replicas"},
		{map[string]string{"remote.storage.enable": "yes"}, ErrInvalidValue, "remote.storage.enable: invalid boolean"},
		{map[string]string{"compression.type": "brotli"}, ErrInvalidValue, "compression.type"},
		{map[string]string{"min.cleanable.dirty.ratio": "2"}, ErrInvalidValue, "min.cleanable.dirty.ratio"},
		{map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, ErrInvalidValue, "min.compaction.lag.ms: 10 must not be more than max.compaction.lag.ms 5"},
		{map[string]string{"remote.storage.enable": "true", "cleanup.policy": "compact"}, ErrInvalidValue, "remote.storage.enable: tiered storage is not supported"},
		{map[string]string{"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "2000"}, ErrInvalidValue,
			"local.retention.ms: 2000 must not be more than retention.ms 1000"},
		{map[string]string{"remote.storage.enable": "true", "retention.bytes": "1000", "local.retention.bytes": "-1"}, ErrInvalidValue,
			"local.retention.bytes: must not be -1 (unlimited) while retention.bytes is 1000"},
	}
	for _, tc := range tests {
		err := ValidateTopicConfigs(tc.overrides)
		if err == nil {
			t.Errorf("ValidateTopicConfigs(%v) succeeded, want %q", tc.overrides, tc.message)
			continue
		}
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.message) {
			t.Errorf("ValidateTopicConfigs(%v) = %v, want %v containing %q", tc.overrides, err, tc.kind, tc.message)
		}
	}
}

func TestValidateTopicNeedsTiering(t *testing.T) {
	on := map[string]string{"remote.storage.enable": "true"}
	err := Default().ValidateTopic(on)
	if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "remote.log.storage.system.enable=false") {
		t.Fatalf("ValidateTopic without tiering = %v", err)
	}
	b := mustParse(t, map[string]string{"remote.log.storage.system.enable": "true"})
	if err := b.ValidateTopic(on); err != nil {
		t.Fatalf("ValidateTopic with tiering: %v", err)
	}
	if err := b.ValidateTopic(map[string]string{"segment.bytes": "x"}); err == nil {
		t.Fatal("ValidateTopic accepted a bad value")
	}
}

func TestTopicKeys(t *testing.T) {
	required := []string{"retention.ms", "retention.bytes", "segment.bytes", "segment.ms", "cleanup.policy", "max.message.bytes",
		"message.timestamp.type", "min.insync.replicas", "remote.storage.enable", "local.retention.ms", "local.retention.bytes"}
	for _, k := range required {
		if !IsTopicKey(k) {
			t.Errorf("%q is not a topic key", k)
		}
	}
	if IsTopicKey("log.retention.ms") {
		t.Error("a broker key is a topic key")
	}
	keys := TopicKeys()
	keys[0] = "mutated"
	if TopicKeys()[0] == "mutated" {
		t.Error("TopicKeys exposes the package's slice")
	}
}

func TestDescribeTopic(t *testing.T) {
	b := mustParse(t, map[string]string{"log.retention.hours": "1", "log.segment.bytes": "16384"})
	es := b.DescribeTopic(map[string]string{"segment.ms": " 100", "message.timestamp.type": "logappendtime", "bogus": "x"})
	if len(es) != len(topicKeys) {
		t.Fatalf("got %d entries, want %d", len(es), len(topicKeys))
	}
	byName := map[string]Entry{}
	for i, e := range es {
		if i > 0 && es[i-1].Name >= e.Name {
			t.Fatalf("entries not sorted: %q before %q", es[i-1].Name, e.Name)
		}
		if e.ReadOnly || e.Sensitive || e.Doc == "" {
			t.Errorf("entry %+v: want writable, not sensitive, documented", e)
		}
		byName[e.Name] = e
	}
	want := []Entry{
		{Name: "segment.ms", Value: "100", Source: SourceDynamicTopic, Type: TypeLong},
		{Name: "message.timestamp.type", Value: "LogAppendTime", Source: SourceDynamicTopic, Type: TypeString},
		{Name: "retention.ms", Value: "3600000", Source: SourceStaticBroker, Type: TypeLong},
		{Name: "segment.bytes", Value: "16384", Source: SourceStaticBroker, Type: TypeInt},
		{Name: "retention.bytes", Value: "-1", Source: SourceDefault, Type: TypeLong},
		{Name: "cleanup.policy", Value: "delete", Source: SourceDefault, Type: TypeList},
		{Name: "remote.storage.enable", Value: "false", Source: SourceDefault, Type: TypeBoolean},
		{Name: "min.cleanable.dirty.ratio", Value: "0.5", Source: SourceDefault, Type: TypeDouble},
		{Name: "flush.ms", Value: "-1", Source: SourceDefault, Type: TypeLong},
	}
	for _, w := range want {
		g := byName[w.Name]
		g.Doc, g.Synonyms = "", nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("entry %s = %+v, want %+v", w.Name, g, w)
		}
	}
	if _, ok := byName["bogus"]; ok {
		t.Error("unknown override described")
	}
	if e := Default().DescribeTopic(map[string]string{"segment.ms": "bad"}); e[len(e)-2].Name != "segment.ms" || e[len(e)-2].Value != "bad" {
		t.Errorf("bad override not shown as written: %+v", e[len(e)-2])
	}
}

func TestDescribeBroker(t *testing.T) {
	b := mustParse(t, map[string]string{"node.id": "5", "remote.log.storage.s3.secret.key": "hunter2"})
	es := b.DescribeBroker()
	if len(es) != len(brokerKeys) {
		t.Fatalf("got %d entries, want %d", len(es), len(brokerKeys))
	}
	byName := map[string]Entry{}
	for i, e := range es {
		if i > 0 && es[i-1].Name >= e.Name {
			t.Fatalf("entries not sorted")
		}
		if e.ReadOnly == IsDynamic(e.Name) {
			t.Errorf("%s: read-only %v, dynamic %v", e.Name, e.ReadOnly, IsDynamic(e.Name))
		}
		byName[e.Name] = e
	}
	if e := byName["node.id"]; e.Value != "5" || e.Source != SourceStaticBroker || e.Type != TypeInt {
		t.Errorf("node.id entry %+v", e)
	}
	if e := byName["num.partitions"]; e.Value != "1" || e.Source != SourceDefault {
		t.Errorf("num.partitions entry %+v", e)
	}
	if e := byName["remote.log.storage.s3.secret.key"]; e.Value != "" || !e.Sensitive || e.Type != TypePassword {
		t.Errorf("secret entry %+v", e)
	}
	if b.Raw["remote.log.storage.s3.secret.key"] != "hunter2" {
		t.Error("Raw lost the secret")
	}
	if e := byName["log.retention.minutes"]; e.Value != "" || e.Source != SourceDefault {
		t.Errorf("unset optional entry %+v", e)
	}
}
