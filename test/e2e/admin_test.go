package e2e

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// metadataFor sends a raw Metadata request for one topic and returns its
// topic entry.
func metadataFor(t *testing.T, cl *kgo.Client, topic string, autoCreate bool) kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = autoCreate
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("metadata %s: %v", topic, err)
	}
	if len(resp.Topics) != 1 {
		t.Fatalf("metadata %s: %d topics in response", topic, len(resp.Topics))
	}
	return resp.Topics[0]
}

// waitPartitions polls metadata until topic has n partitions, all with a
// leader, or fails after 10 s.
func waitPartitions(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mt := metadataFor(t, cl, topic, false)
		ok := mt.ErrorCode == 0 && len(mt.Partitions) == n
		for _, p := range mt.Partitions {
			ok = ok && p.ErrorCode == 0 && p.Leader >= 0
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s: error %d, %d partitions (%+v); want %d with leaders", topic, mt.ErrorCode, len(mt.Partitions), mt.Partitions, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pythonAutoCreate produces one record with kafka-python to a topic that
// does not exist yet and prints how many partitions the producer saw.
const pythonAutoCreate = `
import sys
from kafka import KafkaProducer

addr, topic = sys.argv[1], sys.argv[2]
producer = KafkaProducer(bootstrap_servers=addr, max_block_ms=30000)
md = producer.send(topic, b'v').get(timeout=30)
print(len(producer.partitions_for(topic)), md.partition, md.offset)
producer.close(10)
`

// kcatTopic lists topic with kcat -L -J and returns how many of its
// partitions broker 1 leads, and the topic's error ("" for none).
func kcatTopic(t *testing.T, addr, topic string) (int, string) {
	t.Helper()
	out := harness.Kcat(t, "-b", addr, "-L", "-t", topic, "-J")
	var md struct {
		Topics []struct {
			Topic      string `json:"topic"`
			Error      string `json:"error"`
			Partitions []struct {
				Leader int32 `json:"leader"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	if err := json.Unmarshal([]byte(out), &md); err != nil || len(md.Topics) != 1 || md.Topics[0].Topic != topic {
		t.Fatalf("kcat -L -t %s: %v\n%s", topic, err, out)
	}
	led := 0
	for _, p := range md.Topics[0].Partitions {
		if p.Leader == 1 {
			led++
		}
	}
	return led, md.Topics[0].Error
}

// TestAutoCreateTopics covers auto-creation through a producer and through a
// Metadata request, that allow_auto_topic_creation=false creates nothing,
// and that auto.create.topics.enable=false turns it off.
func TestAutoCreateTopics(t *testing.T) {
	b := harness.Start(t, map[string]string{"num.partitions": "3", "auto.create.topics.enable": "true"})
	cl := b.Client()

	prod := b.Client(kgo.AllowAutoTopicCreation())
	produceSync(t, prod, &kgo.Record{Topic: "auto-on-produce", Value: []byte("v")})
	waitPartitions(t, cl, "auto-on-produce", 3)

	// As Kafka: the request that creates the topic gets
	// LEADER_NOT_AVAILABLE and no partitions; the next one the leaders.
	mt := metadataFor(t, cl, "auto-on-metadata", true)
	if mt.ErrorCode != kerr.LeaderNotAvailable.Code || len(mt.Partitions) != 0 {
		t.Fatalf("metadata with auto-create: error %d (%v), %d partitions; want LEADER_NOT_AVAILABLE and none",
			mt.ErrorCode, kerr.ErrorForCode(mt.ErrorCode), len(mt.Partitions))
	}
	waitPartitions(t, cl, "auto-on-metadata", 3)

	// librdkafka (kcat -L, a producer handle, which may create): its
	// topic handle's own metadata request may have created the topic
	// already, else this answer is Kafka's LEADER_NOT_AVAILABLE.
	if parts, errStr := kcatTopic(t, b.Addr(), "auto-on-kcat"); parts != 3 && !strings.Contains(errStr, "Leader not available") {
		t.Fatalf("kcat -L on a new topic: %d partitions led here, error %q; want 3 or LEADER_NOT_AVAILABLE", parts, errStr)
	}
	waitPartitions(t, cl, "auto-on-kcat", 3)
	if parts, errStr := kcatTopic(t, b.Addr(), "auto-on-kcat"); parts != 3 || errStr != "" {
		t.Fatalf("kcat -L on the created topic: %d partitions led here, error %q; want 3", parts, errStr)
	}

	harness.KcatStdin(t, "a\nb\n", "-b", b.Addr(), "-P", "-t", "auto-on-kcat-produce")
	total := 0
	for _, recs := range harness.ReadAll(t, b.Addr(), "auto-on-kcat-produce") {
		total += len(recs)
	}
	if total != 2 {
		t.Fatalf("kcat -P to a new topic: %d records read back, want 2", total)
	}

	// kafka-python retries LEADER_NOT_AVAILABLE until the producer
	// sees the partitions.
	if out := strings.Fields(harness.Python(t, pythonAutoCreate, b.Addr(), "auto-on-python")); len(out) != 3 || out[0] != "3" || out[2] != "0" {
		t.Fatalf("kafka-python producing to a new topic: %q, want 3 partitions and offset 0", out)
	}

	mt = metadataFor(t, cl, "no-auto", false)
	if mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("metadata without auto-create: error %d, want UNKNOWN_TOPIC_OR_PARTITION", mt.ErrorCode)
	}
	if mt = metadataFor(t, cl, "no-auto", false); mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("topic was created by a metadata request that did not allow it: error %d", mt.ErrorCode)
	}

	off := harness.Start(t, map[string]string{"auto.create.topics.enable": "false"})
	offCl := off.Client()
	if mt = metadataFor(t, offCl, "auto-disabled", true); mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("auto.create.topics.enable=false: metadata error %d, want UNKNOWN_TOPIC_OR_PARTITION", mt.ErrorCode)
	}
	if mt = metadataFor(t, offCl, "auto-disabled", false); mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("auto.create.topics.enable=false: topic exists afterwards (error %d)", mt.ErrorCode)
	}
}

// TestCreateDeleteTopics covers CreateTopics (and its errors), DeleteTopics
// and re-creation under the same name with a new ID and an empty log.
func TestCreateDeleteTopics(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	ctx := testCtx(t)
	created, err := adm.CreateTopics(ctx, 2, 1, nil, "cd-a", "cd-b", "cd-c")
	if err != nil {
		t.Fatalf("create topics: %v", err)
	}
	ids := map[kadm.TopicID]string{}
	for name, r := range created {
		if r.Err != nil {
			t.Fatalf("create %s: %v %s", name, r.Err, r.ErrMessage)
		}
		if r.ID == (kadm.TopicID{}) {
			t.Errorf("create %s: zero topic ID", name)
		}
		ids[r.ID] = name
	}
	if len(ids) != 3 {
		t.Fatalf("topic IDs not distinct: %v", ids)
	}
	for _, name := range []string{"cd-a", "cd-b", "cd-c"} {
		td := topicDetail(t, adm, name)
		if len(td.Partitions) != 2 || td.ID != created[name].ID {
			t.Fatalf("metadata %s: %d partitions, ID %v; want 2, %v", name, len(td.Partitions), td.ID, created[name].ID)
		}
	}

	expectCreateErr := func(name string, parts int32, rf int16, want error) {
		t.Helper()
		r, err := adm.CreateTopic(ctx, parts, rf, nil, name)
		if err == nil {
			err = r.Err
		}
		if !errors.Is(err, want) {
			t.Errorf("create %q (partitions %d, rf %d): %v, want %v", name, parts, rf, err, want)
		}
	}
	expectCreateErr("cd-a", 2, 1, kerr.TopicAlreadyExists)
	expectCreateErr("cd-rf", 1, 3, kerr.InvalidReplicationFactor)
	expectCreateErr("bad/name", 1, 1, kerr.InvalidTopicException)
	expectCreateErr("cd-zero", 0, 1, kerr.InvalidPartitions)

	produceSync(t, b.Client(), &kgo.Record{Topic: "cd-a", Partition: 0, Value: []byte("gone soon")})
	deleted, err := adm.DeleteTopics(ctx, "cd-a", "cd-b", "cd-missing")
	if err != nil {
		t.Fatalf("delete topics: %v", err)
	}
	for _, name := range []string{"cd-a", "cd-b"} {
		if r := deleted[name]; r.Err != nil {
			t.Errorf("delete %s: %v %s", name, r.Err, r.ErrMessage)
		}
	}
	if r := deleted["cd-missing"]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("delete missing topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", r.Err)
	}
	cl := b.Client()
	for _, name := range []string{"cd-a", "cd-b"} {
		if mt := metadataFor(t, cl, name, false); mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("metadata of deleted %s: error %d, want UNKNOWN_TOPIC_OR_PARTITION", name, mt.ErrorCode)
		}
	}
	topicDetail(t, adm, "cd-c") // untouched

	id := harness.CreateTopic(t, adm, "cd-a", 1, nil)
	if id == created["cd-a"].ID {
		t.Errorf("re-created topic kept the old ID %v", id)
	}
	if end := endOffset(t, adm, "cd-a", 0); end != 0 {
		t.Errorf("re-created topic has end offset %d, want 0 (old data must be gone)", end)
	}
}

// TestCreatePartitions grows a topic, produces to a new partition, and
// checks that shrinking and unknown topics are refused.
func TestCreatePartitions(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	ctx := testCtx(t)
	harness.CreateTopic(t, adm, "grow", 2, nil)
	r, err := adm.CreatePartitions(ctx, 2, "grow")
	if err == nil {
		err = r["grow"].Err
	}
	if err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	waitPartitions(t, b.Client(), "grow", 4)
	rec := &kgo.Record{Topic: "grow", Partition: 3, Value: []byte("new partition")}
	produceSync(t, b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), rec)
	if got := harness.ReadAll(t, b.Addr(), "grow")[3]; len(got) != 1 || string(got[0].Value) != "new partition" {
		t.Fatalf("partition 3 holds %d records, want the one produced", len(got))
	}

	r, err = adm.UpdatePartitions(ctx, 3, "grow")
	if err == nil {
		err = r["grow"].Err
	}
	if !errors.Is(err, kerr.InvalidPartitions) {
		t.Errorf("shrink 4 → 3 partitions: %v, want INVALID_PARTITIONS", err)
	}
	r, err = adm.CreatePartitions(ctx, 1, "grow-missing")
	if err == nil {
		err = r["grow-missing"].Err
	}
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("add partitions to a missing topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}

// describe returns the config entries of topic by name.
func describe(t *testing.T, adm *kadm.Client, topic string) map[string]kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(testCtx(t), topic)
	if err != nil {
		t.Fatalf("describe configs %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatalf("describe configs %s: %v", topic, err)
	}
	out := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		out[c.Key] = c
	}
	return out
}

// expectConfig checks a described value and whether it is a topic override.
func expectConfig(t *testing.T, cfgs map[string]kadm.Config, key, value string, override bool) {
	t.Helper()
	c, ok := cfgs[key]
	if !ok {
		t.Errorf("config %s not described", key)
		return
	}
	isOverride := c.Source == kmsg.ConfigSourceDynamicTopicConfig
	if (value != "" && c.MaybeValue() != value) || isOverride != override {
		t.Errorf("config %s = %q (source %v), want %q with topic override %v", key, c.MaybeValue(), c.Source, value, override)
	}
}

// TestTopicConfigs covers DescribeConfigs, IncrementalAlterConfigs and the
// legacy AlterConfigs (which replaces the whole override set), and
// INVALID_CONFIG for unknown keys and bad values.
func TestTopicConfigs(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	ctx := testCtx(t)
	const topic = "configs"
	harness.CreateTopic(t, adm, topic, 1, map[string]string{"retention.ms": "3600000", "cleanup.policy": "delete"})
	cfgs := describe(t, adm, topic)
	expectConfig(t, cfgs, "retention.ms", "3600000", true)
	expectConfig(t, cfgs, "cleanup.policy", "delete", true)
	expectConfig(t, cfgs, "segment.bytes", "", false)
	expectConfig(t, cfgs, "max.message.bytes", "", false)

	alterOK := func(what string, resps kadm.AlterConfigsResponses, err error) {
		t.Helper()
		if err == nil {
			_, err = resps.On(topic, func(r *kadm.AlterConfigsResponse) error { return r.Err })
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	set := func(k, v string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)}
	}

	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		set("segment.bytes", "16384"),
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
	}, topic)
	alterOK("incremental alter", resps, err)
	cfgs = describe(t, adm, topic)
	expectConfig(t, cfgs, "segment.bytes", "16384", true)
	expectConfig(t, cfgs, "retention.ms", "", false)
	expectConfig(t, cfgs, "cleanup.policy", "delete", true)

	resps, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{
		set("cleanup.policy", "compact"),
		set("max.message.bytes", "2000000"),
	}, topic)
	alterOK("legacy alter", resps, err)
	cfgs = describe(t, adm, topic)
	expectConfig(t, cfgs, "cleanup.policy", "compact", true)
	expectConfig(t, cfgs, "max.message.bytes", "2000000", true)
	expectConfig(t, cfgs, "segment.bytes", "", false) // the legacy API replaced all overrides

	alterErr := func(what string, resps kadm.AlterConfigsResponses, err error) {
		t.Helper()
		if err == nil {
			_, err = resps.On(topic, func(r *kadm.AlterConfigsResponse) error { return r.Err })
		}
		if !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%s: %v, want INVALID_CONFIG", what, err)
		}
	}
	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("no.such.config", "1")}, topic)
	alterErr("incremental alter of unknown key", resps, err)
	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{set("retention.ms", "soon")}, topic)
	alterErr("incremental alter with bad value", resps, err)
	resps, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{set("no.such.config", "1")}, topic)
	alterErr("legacy alter of unknown key", resps, err)
	cfgs = describe(t, adm, topic) // failed alters change nothing
	expectConfig(t, cfgs, "cleanup.policy", "compact", true)
	expectConfig(t, cfgs, "max.message.bytes", "2000000", true)
	if _, ok := cfgs["no.such.config"]; ok {
		t.Errorf("unknown key was stored")
	}

	r, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"no.such.config": kadm.StringPtr("1")}, "configs-bad")
	if err == nil {
		err = r.Err
	}
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("create topic with unknown config: %v, want INVALID_CONFIG", err)
	}

	rcs, err := adm.DescribeTopicConfigs(ctx, "configs-missing")
	if err == nil {
		var rc kadm.ResourceConfig
		rc, err = rcs.On("configs-missing", nil)
		if err == nil {
			err = rc.Err
		}
	}
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("describe configs of a missing topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}
