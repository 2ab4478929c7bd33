package config

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDynamicKeys(t *testing.T) {
	for _, k := range []string{"log.retention.ms", "log.cleaner.threads", "log.cleaner.backoff.ms", "message.max.bytes",
		"log.segment.bytes", "num.replica.fetchers", "max.connections", "max.connections.per.ip.overrides", "log.cleanup.policy"} {
		if !IsDynamic(k) {
			t.Errorf("%s is not dynamic", k)
		}
	}
	// Kafka's static keys, including the fallbacks of dynamic ones.
	for _, k := range []string{"node.id", "log.dirs", "listeners", "log.retention.hours", "log.retention.minutes", "log.roll.hours",
		"log.cleaner.enable", "log.retention.check.interval.ms", "replica.lag.time.max.ms", "no.such.key"} {
		if IsDynamic(k) {
			t.Errorf("%s is dynamic", k)
		}
	}
	if !IsBrokerListKey("log.cleanup.policy") || IsBrokerListKey("log.retention.ms") {
		t.Error("list keys misreported")
	}
}

// describedEntry returns the entry named key.
func describedEntry(t *testing.T, es []Entry, key string) Entry {
	t.Helper()
	for _, e := range es {
		if e.Name == key {
			return e
		}
	}
	t.Fatalf("%s not described", key)
	return Entry{}
}

func TestWithDynamicPrecedence(t *testing.T) {
	static := mustParse(t, map[string]string{"log.retention.hours": "1", "log.segment.bytes": "16384"})
	def := map[string]string{"log.retention.ms": "5000", "log.segment.bytes": " 32768 ", "message.max.bytes": "2000000"}
	own := map[string]string{"log.retention.ms": "7000"}
	b, err := static.WithDynamic(def, own)
	if err != nil {
		t.Fatal(err)
	}
	if b.LogRetentionMs != 7000 || b.LogSegmentBytes != 32768 || b.MessageMaxBytes != 2000000 || b.NumPartitions != 1 {
		t.Fatalf("retention %d, segment %d, message max %d, partitions %d", b.LogRetentionMs, b.LogSegmentBytes, b.MessageMaxBytes, b.NumPartitions)
	}
	for key, want := range map[string]int8{
		"log.retention.ms": SourceDynamicBroker, "log.segment.bytes": SourceDynamicDefaultBroker,
		"log.retention.hours": SourceStaticBroker, "num.partitions": SourceDefault,
	} {
		if got := b.Source(key); got != want {
			t.Errorf("source of %s = %d, want %d", key, got, want)
		}
	}
	if gotDef, gotOwn := b.DynamicConfigs(); gotDef["log.segment.bytes"] != "32768" || gotOwn["log.retention.ms"] != "7000" {
		t.Errorf("dynamic layers %v, %v", gotDef, gotOwn)
	}
	// The static layer stays: dropping the dynamic ones goes back to it.
	back, err := b.WithDynamic(nil, nil)
	if err != nil || back.LogRetentionMs != hourMs || back.LogSegmentBytes != 16384 {
		t.Fatalf("without dynamic configs: %v, retention %d, segment %d", err, back.LogRetentionMs, back.LogSegmentBytes)
	}

	es := b.DescribeBroker()
	e := describedEntry(t, es, "log.retention.ms")
	want := []Synonym{
		{"log.retention.ms", "7000", SourceDynamicBroker},
		{"log.retention.ms", "5000", SourceDynamicDefaultBroker},
		{"log.retention.hours", "1", SourceStaticBroker},
		{"log.retention.hours", "168", SourceDefault},
	}
	if e.Value != "7000" || e.Source != SourceDynamicBroker || e.ReadOnly || !reflect.DeepEqual(e.Synonyms, want) {
		t.Errorf("log.retention.ms entry %+v, want synonyms %+v", e, want)
	}
	// A fallback key lists itself first (Kafka drops the synonyms of
	// higher precedence).
	e = describedEntry(t, es, "log.retention.hours")
	if want := want[2:]; e.Source != SourceStaticBroker || !e.ReadOnly || !reflect.DeepEqual(e.Synonyms, want) {
		t.Errorf("log.retention.hours entry %+v, want synonyms %+v", e, want)
	}
	if e = describedEntry(t, es, "log.retention.minutes"); e.Source != SourceDefault || len(e.Synonyms) != 0 {
		t.Errorf("log.retention.minutes entry %+v", e)
	}

	// <default> lists the cluster default only.
	cd := b.DescribeClusterDefault()
	if len(cd) != 3 || cd[0].Name != "log.retention.ms" || cd[1].Name != "log.segment.bytes" || cd[2].Name != "message.max.bytes" {
		t.Fatalf("cluster default described as %+v", cd)
	}
	if e := cd[0]; e.Value != "5000" || e.Source != SourceDynamicDefaultBroker ||
		!reflect.DeepEqual(e.Synonyms, []Synonym{{"log.retention.ms", "5000", SourceDynamicDefaultBroker}}) {
		t.Errorf("cluster default entry %+v", e)
	}

	// A topic without an override takes the dynamic value, and its
	// synonyms list every layer of the broker key after the override.
	te := describedEntry(t, b.DescribeTopic(map[string]string{"segment.bytes": "20000"}), "retention.ms")
	if te.Value != "7000" || te.Source != SourceDynamicBroker || !reflect.DeepEqual(te.Synonyms, want) {
		t.Errorf("topic retention.ms entry %+v", te)
	}
	te = describedEntry(t, b.DescribeTopic(map[string]string{"segment.bytes": "20000"}), "segment.bytes")
	if te.Source != SourceDynamicTopic || len(te.Synonyms) != 4 || te.Synonyms[1] != (Synonym{"log.segment.bytes", "32768", SourceDynamicDefaultBroker}) {
		t.Errorf("topic segment.bytes entry %+v", te)
	}
	tc, err := b.ResolveTopic(nil)
	if err != nil || tc.RetentionMs != 7000 || tc.SegmentBytes != 32768 || tc.MaxMessageBytes != 2000000 {
		t.Errorf("resolved topic %+v, %v", tc, err)
	}
}

func TestWithDynamicErrors(t *testing.T) {
	static := mustParse(t, map[string]string{"remote.log.storage.system.enable": "true", "log.retention.ms": "10000"})
	for _, c := range []struct {
		name     string
		def, own map[string]string
		want     error
		msg      string
	}{
		{name: "static keys", own: map[string]string{"log.retention.hours": "1", "node.id": "7", "log.retention.ms": "1"},
			want: ErrNotDynamic, msg: "Cannot update these configs dynamically: Set(log.retention.hours, node.id)"},
		{name: "static key in the default", def: map[string]string{"log.dirs": "/x"}, want: ErrNotDynamic},
		{name: "unknown key", def: map[string]string{"log.retention.mss": "1"}, want: ErrUnknownKey, msg: `did you mean "log.retention.ms"?`},
		{name: "invalid value", own: map[string]string{"log.cleaner.threads": "-1"}, want: ErrInvalidValue, msg: "log.cleaner.threads"},
		{name: "cross-key rule", def: map[string]string{"log.local.retention.ms": "20000"}, want: ErrInvalidValue, msg: "log.local.retention.ms"},
		{name: "cross-key rule over layers", def: map[string]string{"log.local.retention.ms": "5000"}, own: map[string]string{"log.retention.ms": "1000"},
			want: ErrInvalidValue, msg: "log.local.retention.ms"},
	} {
		_, err := static.WithDynamic(c.def, c.own)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
			continue
		}
		if c.msg != "" && !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: message %q, want it to hold %q", c.name, err, c.msg)
		}
	}
}

func TestEffectiveLeavesOutWhatDoesNotApply(t *testing.T) {
	static := mustParse(t, map[string]string{"remote.log.storage.system.enable": "true", "log.retention.ms": "10000"})
	b, errs := static.Effective(
		map[string]string{"log.segment.bytes": "20000", "node.id": "9", "bogus": "1", "log.cleaner.threads": "x"},
		map[string]string{"message.max.bytes": "5000"})
	if b.LogSegmentBytes != 20000 || b.MessageMaxBytes != 5000 || b.NodeID != 1 || b.LogCleanerThreads != 1 || len(errs) != 3 {
		t.Fatalf("segment %d, message max %d, node %d, cleaner threads %d, errors %v", b.LogSegmentBytes, b.MessageMaxBytes, b.NodeID, b.LogCleanerThreads, errs)
	}
	// This broker's configs break a rule with the default: they are left
	// out; then the default alone breaks it: static only.
	b, errs = static.Effective(map[string]string{"log.local.retention.ms": "5000"}, map[string]string{"log.retention.ms": "1000"})
	if b.LogLocalRetentionMs != 5000 || b.LogRetentionMs != 10000 || len(errs) != 1 {
		t.Fatalf("local retention %d, retention %d, errors %v", b.LogLocalRetentionMs, b.LogRetentionMs, errs)
	}
	b, errs = static.Effective(map[string]string{"log.local.retention.ms": "50000"}, nil)
	if b.LogLocalRetentionMs != -2 || b.Source("log.local.retention.ms") != SourceDefault || len(errs) != 1 {
		t.Fatalf("local retention %d, errors %v", b.LogLocalRetentionMs, errs)
	}
}

// source is a DynamicSource in memory.
type source struct {
	rev     int64
	configs map[int32]map[string]string
	changed chan struct{}
}

func (s *source) BrokerConfigs(id int32) map[string]string { return s.configs[id] }
func (s *source) Revision() int64                          { return s.rev }
func (s *source) Changed() <-chan struct{}                 { return s.changed }

func (s *source) set(id int32, m map[string]string) {
	s.rev++
	s.configs[id] = m
	close(s.changed)
	s.changed = make(chan struct{})
}

func TestLive(t *testing.T) {
	static := mustParse(t, map[string]string{"node.id": "2"})
	l := NewLive(static)
	src := &source{rev: 1, configs: map[int32]map[string]string{}, changed: make(chan struct{})}
	if l.Load() != static || l.Static() != static {
		t.Fatal("a new Live does not hold the static configuration")
	}
	changed := l.Changed()
	l.Refresh(src, 2)
	if l.Load() != static || l.Revision() != 1 || isClosed(changed) {
		t.Fatal("a refresh without dynamic configs changed the configuration")
	}

	src.set(-1, map[string]string{"log.retention.ms": "5000"})
	src.set(3, map[string]string{"log.retention.ms": "1"}) // another broker's
	l.Refresh(src, 2)
	if l.Load().LogRetentionMs != 5000 || l.Revision() != 3 || !isClosed(changed) {
		t.Fatalf("retention %d at revision %d", l.Load().LogRetentionMs, l.Revision())
	}
	src.set(2, map[string]string{"log.retention.ms": "7000", "node.id": "5"})
	if errs := l.Refresh(src, 2); len(errs) != 1 || l.Load().LogRetentionMs != 7000 || l.Load().NodeID != 2 {
		t.Fatalf("retention %d, node %d, errors %v", l.Load().LogRetentionMs, l.Load().NodeID, errs)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.WaitRevision(ctx, 4); err != nil {
		t.Fatal(err)
	}
	short, stop := context.WithTimeout(ctx, time.Millisecond)
	defer stop()
	if err := l.WaitRevision(short, 5); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting for a revision not reached: %v", err)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestCheckReconfiguration(t *testing.T) {
	cur := mustParse(t, map[string]string{"log.cleaner.threads": "4", "num.replica.fetchers": "2"})
	for _, c := range []struct {
		own  map[string]string
		want string // "" passes
	}{
		{nil, ""},
		{map[string]string{"log.cleaner.threads": "8", "num.replica.fetchers": "1"}, ""},
		{map[string]string{"log.cleaner.threads": "2"}, ""},
		{map[string]string{"log.cleaner.threads": "9"}, "log.cleaner.threads: dynamic thread count 9: must not be more than double the current value 4"},
		{map[string]string{"log.cleaner.threads": "1"}, "at least half the current value 4"},
		{map[string]string{"log.cleaner.threads": "0"}, "must be at least 1"},
		{map[string]string{"num.replica.fetchers": "5"}, "num.replica.fetchers"},
	} {
		next, err := cur.WithDynamic(nil, c.own)
		if err != nil {
			t.Fatal(err)
		}
		err = cur.CheckReconfiguration(next)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.own, err, c.want)
		}
	}
}

// appliedLive lists the dynamic keys that are not topic defaults, with
// the part that applies a change of them while the broker runs.
var appliedLive = map[string]string{
	"log.cleaner.threads":                 "compaction.Service replaces its cleaner",
	"log.cleaner.backoff.ms":              "compaction.Service replaces its cleaner",
	"log.cleaner.dedupe.buffer.size":      "compaction.Service replaces its cleaner",
	"log.cleaner.io.max.bytes.per.second": "compaction.Service replaces its cleaner",
	"num.replica.fetchers":                "replica.Fetcher.SetFetchers",
	"max.connections":                     "the broker's connection quotas",
	"max.connections.per.ip":              "the broker's connection quotas",
	"max.connections.per.ip.overrides":    "the broker's connection quotas",
}

// TestDynamicKeysAreAppliedLive: a key is marked dynamic only when a
// running broker applies it: topic defaults reach the partitions through
// their resolved configs, the others are listed in appliedLive. No
// sensitive key is dynamic (their values are logged when they change).
func TestDynamicKeysAreAppliedLive(t *testing.T) {
	topicDefault := map[string]bool{}
	for _, d := range topicKeys {
		topicDefault[d.broker] = true
	}
	for _, d := range brokerKeys {
		if !d.dynamic {
			if _, ok := appliedLive[d.name]; ok {
				t.Errorf("%s is listed as applied live but is not dynamic", d.name)
			}
			continue
		}
		if _, ok := appliedLive[d.name]; !ok && !topicDefault[d.name] {
			t.Errorf("%s is dynamic but neither a topic default nor listed in appliedLive", d.name)
		}
		if d.sensitive {
			t.Errorf("%s is dynamic and sensitive", d.name)
		}
	}
}
