package config

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Topic is the effective configuration of one topic: its overrides on top
// of the broker's log.* defaults. Values are plain copies; a Topic may be
// passed around freely.
type Topic struct {
	SegmentBytes                    int64 // segment.bytes (at least 14)
	SegmentMs                       int64 // segment.ms (at least 1)
	SegmentJitterMs                 int64 // segment.jitter.ms
	SegmentIndexBytes               int32 // segment.index.bytes
	RetentionMs                     int64 // retention.ms (-1 unlimited)
	RetentionBytes                  int64 // retention.bytes (-1 unlimited)
	LocalRetentionMs                int64 // local.retention.ms (-2 follow RetentionMs)
	LocalRetentionBytes             int64 // local.retention.bytes (-2 follow RetentionBytes)
	DeleteRetentionMs               int64 // delete.retention.ms
	MinCompactionLagMs              int64 // min.compaction.lag.ms
	MaxCompactionLagMs              int64 // max.compaction.lag.ms
	IndexIntervalBytes              int64 // index.interval.bytes
	FlushMessages                   int64 // flush.messages (MaxInt64: never)
	FlushMs                         int64 // flush.ms (-1 or MaxInt64: never)
	FileDeleteDelayMs               int64 // file.delete.delay.ms
	MessageTimestampDifferenceMaxMs int64 // message.timestamp.difference.max.ms
	MessageTimestampBeforeMaxMs     int64 // message.timestamp.before.max.ms
	MessageTimestampAfterMaxMs      int64 // message.timestamp.after.max.ms
	MaxMessageBytes                 int32 // max.message.bytes
	MinInsyncReplicas               int32 // min.insync.replicas

	CleanupPolicy         string // cleanup.policy as written: "delete", "compact", "compact,delete" or ""
	Compact, Delete       bool   // what CleanupPolicy contains
	MessageTimestampType  string // message.timestamp.type: CreateTime or LogAppendTime
	LogAppendTime         bool   // MessageTimestampType == LogAppendTime
	CompressionType       string // compression.type; stored and reported, batches pass through
	Preallocate           bool   // preallocate
	UncleanLeaderElection bool   // unclean.leader.election.enable

	RemoteStorageEnable      bool // remote.storage.enable
	RemoteLogCopyDisable     bool // remote.log.copy.disable (KIP-950)
	RemoteLogDeleteOnDisable bool // remote.log.delete.on.disable (KIP-950)

	MinCleanableDirtyRatio float64 // min.cleanable.dirty.ratio
}

// topicDef is one row of the topic key table. A topic key without an
// override takes the effective value of its broker key, or def when it has
// none (topic-only keys).
type topicDef struct {
	name   string
	typ    int8
	broker string // broker key supplying the default; "" uses def
	def    string
	doc    string
	compat bool // as keyDef.compat
	f      field[Topic]
}

// topicKeys is the table of every topic-level key Strata accepts.
var topicKeys = []topicDef{
	{name: "cleanup.policy", typ: TypeList, broker: "log.cleanup.policy", doc: "delete, compact, or both.",
		f: policyField(func(t *Topic) *string { return &t.CleanupPolicy }, func(t *Topic) (*bool, *bool) { return &t.Compact, &t.Delete })},
	{name: "compression.type", typ: TypeString, broker: "compression.type", compat: true, doc: compatDoc + " Kafka: codec of stored batches, producer keeping the producer's. Strata always stores batches as the producer sent them.",
		f: enumField(func(t *Topic) *string { return &t.CompressionType }, compressionTypes...)},
	{name: "delete.retention.ms", typ: TypeLong, broker: "log.cleaner.delete.retention.ms", doc: "How long tombstones are kept in a compacted topic.",
		f: intField(0, func(t *Topic) *int64 { return &t.DeleteRetentionMs })},
	{name: "file.delete.delay.ms", typ: TypeLong, broker: "log.segment.delete.delay.ms", compat: true, doc: compatDoc + " Kafka: delay before a deleted segment's files are removed.",
		f: intField(0, func(t *Topic) *int64 { return &t.FileDeleteDelayMs })},
	{name: "flush.messages", typ: TypeLong, broker: "log.flush.interval.messages", doc: "Records appended before the log is fsynced.",
		f: intField(1, func(t *Topic) *int64 { return &t.FlushMessages })},
	{name: "flush.ms", typ: TypeLong, broker: "log.flush.interval.ms", doc: "Longest time appended data stays unflushed; -1 never.",
		f: intField(-1, func(t *Topic) *int64 { return &t.FlushMs })},
	{name: "index.interval.bytes", typ: TypeInt, broker: "log.index.interval.bytes", doc: "Bytes of log between two offset index entries.",
		f: intRange(0, math.MaxInt32, func(t *Topic) *int64 { return &t.IndexIntervalBytes })},
	{name: "local.retention.bytes", typ: TypeLong, broker: "log.local.retention.bytes", doc: "Local size of a tiered partition; -2 follows retention.bytes.",
		f: intField(-2, func(t *Topic) *int64 { return &t.LocalRetentionBytes })},
	{name: "local.retention.ms", typ: TypeLong, broker: "log.local.retention.ms", doc: "Age after which a tiered segment's local copy is deleted; -2 follows retention.ms.",
		f: intField(-2, func(t *Topic) *int64 { return &t.LocalRetentionMs })},
	{name: "max.compaction.lag.ms", typ: TypeLong, broker: "log.cleaner.max.compaction.lag.ms", doc: "Oldest a record may get before its log is compacted.",
		f: intField(1, func(t *Topic) *int64 { return &t.MaxCompactionLagMs })},
	{name: "max.message.bytes", typ: TypeInt, broker: "message.max.bytes", doc: "Largest record batch accepted.",
		f: intField(0, func(t *Topic) *int32 { return &t.MaxMessageBytes })},
	{name: "message.timestamp.after.max.ms", typ: TypeLong, broker: "log.message.timestamp.after.max.ms", compat: true, doc: compatDoc + " Kafka: how far in the future a CreateTime timestamp may be.",
		f: intField(0, func(t *Topic) *int64 { return &t.MessageTimestampAfterMaxMs })},
	{name: "message.timestamp.before.max.ms", typ: TypeLong, broker: "log.message.timestamp.before.max.ms", compat: true, doc: compatDoc + " Kafka: how far in the past a CreateTime timestamp may be.",
		f: intField(0, func(t *Topic) *int64 { return &t.MessageTimestampBeforeMaxMs })},
	{name: "message.timestamp.difference.max.ms", typ: TypeLong, broker: "log.message.timestamp.difference.max.ms", compat: true, doc: compatDoc + " Kafka: largest distance between a CreateTime timestamp and the broker's clock.",
		f: intField(0, func(t *Topic) *int64 { return &t.MessageTimestampDifferenceMaxMs })},
	{name: "message.timestamp.type", typ: TypeString, broker: "log.message.timestamp.type", doc: "CreateTime or LogAppendTime.",
		f: timestampTypeField(func(t *Topic) *string { return &t.MessageTimestampType }, func(t *Topic) *bool { return &t.LogAppendTime })},
	{name: "min.cleanable.dirty.ratio", typ: TypeDouble, broker: "log.cleaner.min.cleanable.ratio", doc: "Dirty share of the log above which it is compacted.",
		f: floatRange(0, 1, func(t *Topic) *float64 { return &t.MinCleanableDirtyRatio })},
	{name: "min.compaction.lag.ms", typ: TypeLong, broker: "log.cleaner.min.compaction.lag.ms", doc: "Youngest record age that may be compacted.",
		f: intField(0, func(t *Topic) *int64 { return &t.MinCompactionLagMs })},
	{name: "min.insync.replicas", typ: TypeInt, broker: "min.insync.replicas", doc: "Replicas that must acknowledge an acks=all produce.",
		f: intField(1, func(t *Topic) *int32 { return &t.MinInsyncReplicas })},
	{name: "preallocate", typ: TypeBoolean, broker: "log.preallocate", compat: true, doc: compatDoc + " Kafka: preallocate segment files.",
		f: boolField(func(t *Topic) *bool { return &t.Preallocate })},
	{name: "remote.log.copy.disable", typ: TypeBoolean, def: "false", doc: "Stop copying segments to the tier while keeping tiered data readable (KIP-950).",
		f: boolField(func(t *Topic) *bool { return &t.RemoteLogCopyDisable })},
	{name: "remote.log.delete.on.disable", typ: TypeBoolean, def: "false", doc: "Delete tiered data when remote.storage.enable is turned off (KIP-950).",
		f: boolField(func(t *Topic) *bool { return &t.RemoteLogDeleteOnDisable })},
	{name: "remote.storage.enable", typ: TypeBoolean, def: "false", doc: "Copy sealed segments to the tier (needs remote.log.storage.system.enable).",
		f: boolField(func(t *Topic) *bool { return &t.RemoteStorageEnable })},
	{name: "retention.bytes", typ: TypeLong, broker: "log.retention.bytes", doc: "Largest size of a partition; -1 unlimited.",
		f: intField(-1, func(t *Topic) *int64 { return &t.RetentionBytes })},
	{name: "retention.ms", typ: TypeLong, broker: "log.retention.ms", doc: "Age after which a segment is deleted; -1 unlimited.",
		f: intField(-1, func(t *Topic) *int64 { return &t.RetentionMs })},
	{name: "segment.bytes", typ: TypeInt, broker: "log.segment.bytes", doc: "Size at which the active segment is rolled.",
		f: intRange(14, math.MaxInt32, func(t *Topic) *int64 { return &t.SegmentBytes })},
	{name: "segment.index.bytes", typ: TypeInt, broker: "log.index.size.max.bytes", compat: true, doc: compatDoc + " Kafka: largest offset index file.",
		f: intField(4, func(t *Topic) *int32 { return &t.SegmentIndexBytes })},
	{name: "segment.jitter.ms", typ: TypeLong, broker: "log.roll.jitter.ms", compat: true, doc: compatDoc + " Kafka: random jitter subtracted from segment.ms.",
		f: intField(0, func(t *Topic) *int64 { return &t.SegmentJitterMs })},
	{name: "segment.ms", typ: TypeLong, broker: "log.roll.ms", doc: "Age at which the active segment is rolled.",
		f: intField(1, func(t *Topic) *int64 { return &t.SegmentMs })},
	{name: "unclean.leader.election.enable", typ: TypeBoolean, broker: "unclean.leader.election.enable", doc: "Allow a replica outside the ISR to become leader.",
		f: boolField(func(t *Topic) *bool { return &t.UncleanLeaderElection })},
}

var (
	topicIndex = map[string]*topicDef{}
	topicNames []string
)

func init() {
	for i := range topicKeys {
		topicIndex[topicKeys[i].name] = &topicKeys[i]
		topicNames = append(topicNames, topicKeys[i].name)
	}
	sort.Strings(topicNames)
}

// TopicKeys returns the names of all topic-level keys, sorted.
func TopicKeys() []string { return append([]string(nil), topicNames...) }

// IsTopicKey reports whether name is a topic-level key.
func IsTopicKey(name string) bool { _, ok := topicIndex[name]; return ok }

// topicDefault is the text a topic key has without an override.
func (b *Broker) topicDefault(d *topicDef) string {
	if d.broker == "" {
		return d.def
	}
	return b.Raw[d.broker]
}

// ResolveTopic returns the effective configuration of a topic with the
// given overrides. An unknown key or a bad value fails with a *KeyError
// naming the key, as do Kafka's cross-key rules: min.compaction.lag.ms
// must not exceed max.compaction.lag.ms, and on a tiered topic
// (remote.storage.enable=true) cleanup.policy must not include compact and
// local.retention.* must not exceed retention.*.
func (b *Broker) ResolveTopic(overrides map[string]string) (Topic, error) {
	if err := checkTopicNames(overrides); err != nil {
		return Topic{}, err
	}
	var t Topic
	for i := range topicKeys {
		d := &topicKeys[i]
		v, ok := overrides[d.name]
		if ok {
			v = strings.TrimSpace(v)
		} else {
			v = b.topicDefault(d)
		}
		if err := d.f.set(&t, v); err != nil {
			return Topic{}, invalid(d.name, err)
		}
	}
	if t.MinCompactionLagMs > t.MaxCompactionLagMs {
		return Topic{}, invalid("min.compaction.lag.ms", fmt.Errorf("%d must not be more than max.compaction.lag.ms %d", t.MinCompactionLagMs, t.MaxCompactionLagMs))
	}
	if t.RemoteStorageEnable {
		if t.Compact {
			return Topic{}, invalid("remote.storage.enable", fmt.Errorf("tiered storage is not supported for topics with cleanup.policy=%s", t.CleanupPolicy))
		}
		if err := checkLocalRetention("local.retention.ms", "retention.ms", t.LocalRetentionMs, t.RetentionMs); err != nil {
			return Topic{}, err
		}
		if err := checkLocalRetention("local.retention.bytes", "retention.bytes", t.LocalRetentionBytes, t.RetentionBytes); err != nil {
			return Topic{}, err
		}
	}
	return t, nil
}

// ValidateTopic is what CreateTopics and (Incremental)AlterConfigs should
// check: ResolveTopic's rules plus that tiering is enabled on the broker
// when the overrides turn remote.storage.enable on.
func (b *Broker) ValidateTopic(overrides map[string]string) error {
	t, err := b.ResolveTopic(overrides)
	if err != nil {
		return err
	}
	if t.RemoteStorageEnable && !b.RemoteLogStorageSystemEnable {
		return invalid("remote.storage.enable", fmt.Errorf("tiered storage is disabled on this broker (remote.log.storage.system.enable=false)"))
	}
	return nil
}

// ValidateTopicConfigs checks topic overrides against the built-in broker
// defaults: unknown keys, malformed values and cross-key rules fail with a
// *KeyError naming the key. A broker should prefer (*Broker).ValidateTopic,
// which also sees its own log.* settings.
func ValidateTopicConfigs(overrides map[string]string) error {
	_, err := Default().ResolveTopic(overrides)
	return err
}

// checkTopicNames fails on the alphabetically first unknown key, so the
// error does not depend on map order.
func checkTopicNames(overrides map[string]string) error {
	var bad []string
	for k := range overrides {
		if _, ok := topicIndex[k]; !ok {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return unknownKey(bad[0], topicNames)
}
