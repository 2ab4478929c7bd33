package handler

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

// Tables of the config APIs on broker resources: dynamic broker configs
// of one broker (its id) and of the cluster default ("").

// withDynamic stores dynamic configs (key, value pairs) of broker id (or
// metadata.ClusterDefault) and waits until the broker applied them.
func withDynamic(id int32, kv ...string) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		t.Helper()
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rev, err := s.store.SetBrokerConfigs(ctx, id, m)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.env.Cfg.WaitRevision(ctx, rev); err != nil {
			t.Fatal(err)
		}
	}
}

// wantDynamic checks the stored dynamic configs of broker id (or the
// cluster default); kv nil: none.
func wantDynamic(t *testing.T, s *scene, id int32, kv ...string) {
	t.Helper()
	want := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		want[kv[i]] = kv[i+1]
	}
	if got := s.env.Cache.BrokerConfigs(id); !maps.Equal(got, want) {
		t.Fatalf("dynamic configs of %d: %v, want %v", id, got, want)
	}
}

// wantSynonyms checks a described key's synonyms (name, value, source
// triples) at v1+.
func wantSynonyms(t *testing.T, r *kmsg.DescribeConfigsResponse, key string, want ...any) {
	t.Helper()
	if r.Version == 0 {
		return
	}
	c := described(t, r, key)
	if len(c.ConfigSynonyms) != len(want)/3 {
		t.Fatalf("%s: %d synonyms %+v, want %v", key, len(c.ConfigSynonyms), c.ConfigSynonyms, want)
	}
	for i, s := range c.ConfigSynonyms {
		name, value, source := want[3*i].(string), want[3*i+1].(string), want[3*i+2].(kmsg.ConfigSource)
		if s.Name != name || s.Value == nil || *s.Value != value || s.Source != source {
			t.Fatalf("%s synonym %d: %s=%s (%v), want %s=%s (%v)", key, i, s.Name, msgString(s.Value), s.Source, name, value, source)
		}
	}
}

var (
	srcDynamicBroker  = kmsg.ConfigSourceDynamicBrokerConfig
	srcDynamicDefault = kmsg.ConfigSourceDynamicDefaultBrokerConfig
	srcStatic         = kmsg.ConfigSourceStaticBrokerConfig
	srcDefault        = kmsg.ConfigSourceDefaultConfig
)

func TestDescribeBrokerConfigs(t *testing.T) {
	dynamic := steps(withDynamic(metadata.ClusterDefault, "log.retention.ms", "6000", "log.segment.bytes", "2097152"),
		withDynamic(1, "log.retention.ms", "7000"))
	static := sceneOpts{config: map[string]string{"log.retention.hours": "2"}}
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.DescribeConfigsResponse]{
		{
			name: "sources and synonyms", scene: static, setup: dynamic, req: describeReq(brokerResource, "1"),
			want: func(t *testing.T, _ *scene, r *kmsg.DescribeConfigsResponse) {
				wantDescribed(t, r, "log.retention.ms", "7000", srcDynamicBroker)
				wantSynonyms(t, r, "log.retention.ms",
					"log.retention.ms", "7000", srcDynamicBroker,
					"log.retention.ms", "6000", srcDynamicDefault,
					"log.retention.hours", "2", srcStatic,
					"log.retention.hours", "168", srcDefault)
				// A fallback key: the synonyms before its own are left out.
				wantDescribed(t, r, "log.retention.hours", "2", srcStatic)
				wantSynonyms(t, r, "log.retention.hours", "log.retention.hours", "2", srcStatic, "log.retention.hours", "168", srcDefault)
				wantDescribed(t, r, "log.segment.bytes", "2097152", srcDynamicDefault)
				wantDescribed(t, r, "num.partitions", "1", srcDefault)
				if c := described(t, r, "log.retention.hours"); !c.ReadOnly {
					t.Fatal("log.retention.hours (static in Kafka) is not read-only")
				}
				if c := described(t, r, "log.segment.bytes"); c.ReadOnly {
					t.Fatal("log.segment.bytes is read-only")
				}
			},
		},
		{
			name: "cluster default lists its keys", scene: static, setup: dynamic, req: describeReq(brokerResource, ""),
			want: func(t *testing.T, _ *scene, r *kmsg.DescribeConfigsResponse) {
				if n := len(r.Resources[0].Configs); n != 2 {
					t.Fatalf("%d keys described, want the cluster default's 2", n)
				}
				wantDescribed(t, r, "log.retention.ms", "6000", srcDynamicDefault)
				wantSynonyms(t, r, "log.retention.ms", "log.retention.ms", "6000", srcDynamicDefault)
				wantDescribed(t, r, "log.segment.bytes", "2097152", srcDynamicDefault)
			},
		},
		{
			name: "cluster default without configs", req: describeReq(brokerResource, ""),
			want: func(t *testing.T, _ *scene, r *kmsg.DescribeConfigsResponse) {
				if n := len(r.Resources[0].Configs); n != 0 {
					t.Fatalf("%d keys described, want none", n)
				}
			},
		},
		{
			name: "topic inherits the dynamic default", scene: static, setup: steps(withConfiguredTopic("segment.bytes", "1048576"), dynamic),
			req: describeReq(topicResource, "t"),
			want: func(t *testing.T, _ *scene, r *kmsg.DescribeConfigsResponse) {
				wantDescribed(t, r, "retention.ms", "7000", srcDynamicBroker)
				wantSynonyms(t, r, "retention.ms",
					"log.retention.ms", "7000", srcDynamicBroker,
					"log.retention.ms", "6000", srcDynamicDefault,
					"log.retention.hours", "2", srcStatic,
					"log.retention.hours", "168", srcDefault)
				wantDescribed(t, r, "segment.bytes", "1048576", kmsg.ConfigSourceDynamicTopicConfig)
				wantSynonyms(t, r, "segment.bytes",
					"segment.bytes", "1048576", kmsg.ConfigSourceDynamicTopicConfig,
					"log.segment.bytes", "2097152", srcDynamicDefault,
					"log.segment.bytes", "1073741824", srcDefault)
			},
		},
		{
			name: "without synonyms", setup: dynamic,
			req: func(t *testing.T, s *scene) kmsg.Request {
				req := describeReq(brokerResource, "1", "log.retention.ms")(t, s).(*kmsg.DescribeConfigsRequest)
				req.IncludeSynonyms = false
				return req
			},
			want: func(t *testing.T, _ *scene, r *kmsg.DescribeConfigsResponse) {
				if c := described(t, r, "log.retention.ms"); len(c.ConfigSynonyms) != 0 || (r.Version >= 1 && c.Source != srcDynamicBroker) {
					t.Fatalf("log.retention.ms described as %+v", c)
				}
			},
		},
	})
}

// wantRetention checks the broker's effective log.retention.ms and that
// of topic t's live partition, which has no override.
func wantRetention(ms int64) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		t.Helper()
		if got := s.env.cfg().LogRetentionMs; got != ms {
			t.Fatalf("effective log.retention.ms %d, want %d", got, ms)
		}
		if p, ok := s.env.Partitions.Get("t", 0); ok && p.Config().RetentionMs != ms {
			t.Fatalf("live partition has retention.ms %d, want %d", p.Config().RetentionMs, ms)
		}
	}
}

func TestAlterBrokerConfigs(t *testing.T) {
	topic := withConfiguredTopic()
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.AlterConfigsResponse]{
		{
			name: "per broker, applied live", setup: topic,
			req: alterReq(false, brokerResource, "1", "log.retention.ms", "1000", "message.max.bytes", "2000000"),
			want: func(t *testing.T, s *scene, _ *kmsg.AlterConfigsResponse) {
				wantDynamic(t, s, 1, "log.retention.ms", "1000", "message.max.bytes", "2000000")
				wantRetention(1000)(t, s)
				if p, _ := s.env.Partitions.Get("t", 0); p.Config().MaxMessageBytes != 2000000 {
					t.Fatalf("live partition has max.message.bytes %d", p.Config().MaxMessageBytes)
				}
			},
		},
		{
			name: "replaces the whole set", setup: withDynamic(1, "log.retention.ms", "1000", "log.segment.bytes", "2097152"),
			req: alterReq(false, brokerResource, "1", "message.max.bytes", "2000000"),
			want: func(t *testing.T, s *scene, _ *kmsg.AlterConfigsResponse) {
				wantDynamic(t, s, 1, "message.max.bytes", "2000000")
				if c := s.env.cfg(); c.LogSegmentBytes != 1<<30 || c.LogRetentionMs != 168*3600*1000 {
					t.Fatalf("effective segment %d, retention %d: the replaced keys did not go back", c.LogSegmentBytes, c.LogRetentionMs)
				}
			},
		},
		{
			name: "cluster default", setup: topic, req: alterReq(false, brokerResource, "", "log.retention.ms", "3000"),
			want: func(t *testing.T, s *scene, _ *kmsg.AlterConfigsResponse) {
				wantDynamic(t, s, metadata.ClusterDefault, "log.retention.ms", "3000")
				wantRetention(3000)(t, s)
			},
		},
		{
			name: "per broker wins over the cluster default", setup: steps(topic, withDynamic(metadata.ClusterDefault, "log.retention.ms", "3000")),
			req:  alterReq(false, brokerResource, "1", "log.retention.ms", "4000"),
			want: func(t *testing.T, s *scene, _ *kmsg.AlterConfigsResponse) { wantRetention(4000)(t, s) },
		},
		{
			name: "clear", setup: withDynamic(1, "log.retention.ms", "1000"), req: alterReq(false, brokerResource, "1"),
			want: func(t *testing.T, s *scene, _ *kmsg.AlterConfigsResponse) {
				wantDynamic(t, s, 1)
				wantRetention(168*3600*1000)(t, s)
			},
		},
		{
			name: "static key", setup: withDynamic(1, "log.retention.ms", "1000"),
			req:   alterReq(false, brokerResource, "1", "log.retention.ms", "2000", "log.retention.hours", "1", "node.id", "3"),
			codes: []int16{codeInvalidRequest},
			want: func(t *testing.T, s *scene, r *kmsg.AlterConfigsResponse) {
				wantMessage(t, true, r.Resources[0].ErrorMessage, "Cannot update these configs dynamically: Set(log.retention.hours, node.id)")
				wantDynamic(t, s, 1, "log.retention.ms", "1000")
			},
		},
		{
			name: "unknown key", req: alterReq(false, brokerResource, "", "log.retention.mss", "1"), codes: []int16{codeInvalidConfig},
			want: func(t *testing.T, s *scene, r *kmsg.AlterConfigsResponse) {
				wantMessage(t, true, r.Resources[0].ErrorMessage, "log.retention.mss")
				wantDynamic(t, s, metadata.ClusterDefault)
			},
		},
		{
			name: "invalid value", req: alterReq(false, brokerResource, "1", "log.retention.ms", "1000", "log.cleaner.threads", "-1"),
			codes: []int16{codeInvalidConfig},
			want: func(t *testing.T, s *scene, r *kmsg.AlterConfigsResponse) {
				wantMessage(t, true, r.Resources[0].ErrorMessage, "log.cleaner.threads")
				wantDynamic(t, s, 1)
			},
		},
		{
			// A default that one topic's overrides would not resolve
			// against: refused, as that topic's partitions would stop
			// following their configs.
			name: "would break a topic", setup: withConfiguredTopic("min.compaction.lag.ms", "1000"),
			req:   alterReq(false, brokerResource, "", "log.cleaner.max.compaction.lag.ms", "500"),
			codes: []int16{codeInvalidConfig},
			want: func(t *testing.T, s *scene, r *kmsg.AlterConfigsResponse) {
				wantMessage(t, true, r.Resources[0].ErrorMessage, "topic t")
				wantDynamic(t, s, metadata.ClusterDefault)
			},
		},
		{
			name: "validate only", req: alterReq(true, brokerResource, "1", "log.retention.ms", "1000"),
			want: func(t *testing.T, s *scene, _ *kmsg.AlterConfigsResponse) {
				wantDynamic(t, s, 1)
				wantRetention(168*3600*1000)(t, s)
			},
		},
		{name: "validate only, static key", req: alterReq(true, brokerResource, "1", "log.dirs", "/x"), codes: []int16{codeInvalidRequest}},
		{
			// Any broker may write another's configs; that one applies
			// them, this one does not.
			name: "another broker", req: alterReq(false, brokerResource, "2", "log.retention.ms", "1000"),
			want: func(t *testing.T, s *scene, _ *kmsg.AlterConfigsResponse) {
				wantDynamic(t, s, 2, "log.retention.ms", "1000")
				wantRetention(168*3600*1000)(t, s)
			},
		},
		{name: "broker name not a number", req: alterReq(false, brokerResource, "one", "log.retention.ms", "1"), codes: []int16{codeInvalidRequest}},
		{name: "negative broker id", req: alterReq(false, brokerResource, "-1", "log.retention.ms", "1"), codes: []int16{codeInvalidRequest}},
	})
}

func TestIncrementalAlterBrokerConfigs(t *testing.T) {
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.IncrementalAlterConfigsResponse]{
		{
			name: "set keeps the others", setup: steps(withConfiguredTopic(), withDynamic(1, "message.max.bytes", "2000000")),
			req: incrementalReq(false, brokerResource, "1", configOp{opSet, "log.retention.ms", "1000"}, configOp{opSet, "num.replica.fetchers", "2"}),
			want: func(t *testing.T, s *scene, _ *kmsg.IncrementalAlterConfigsResponse) {
				wantDynamic(t, s, 1, "message.max.bytes", "2000000", "log.retention.ms", "1000", "num.replica.fetchers", "2")
				wantRetention(1000)(t, s)
				if n := s.env.cfg().NumReplicaFetchers; n != 2 {
					t.Fatalf("num.replica.fetchers %d", n)
				}
			},
		},
		{
			name: "delete", setup: withDynamic(metadata.ClusterDefault, "message.max.bytes", "2000000", "log.retention.ms", "1000"),
			req: incrementalReq(false, brokerResource, "", configOp{opDelete, "log.retention.ms", ""}),
			want: func(t *testing.T, s *scene, _ *kmsg.IncrementalAlterConfigsResponse) {
				wantDynamic(t, s, metadata.ClusterDefault, "message.max.bytes", "2000000")
				wantRetention(168*3600*1000)(t, s)
			},
		},
		{
			// Deleting a static key changes nothing, as in Kafka.
			name: "delete a static key", req: incrementalReq(false, brokerResource, "1", configOp{opDelete, "log.dirs", ""}),
			want: func(t *testing.T, s *scene, _ *kmsg.IncrementalAlterConfigsResponse) { wantDynamic(t, s, 1) },
		},
		{
			name: "append starts from the static value", setup: withConfiguredTopic(),
			req: incrementalReq(false, brokerResource, "", configOp{opAppend, "log.cleanup.policy", "compact"}),
			want: func(t *testing.T, s *scene, _ *kmsg.IncrementalAlterConfigsResponse) {
				wantDynamic(t, s, metadata.ClusterDefault, "log.cleanup.policy", "delete,compact")
				if p, _ := s.env.Partitions.Get("t", 0); !p.Config().Compact || !p.Config().Delete {
					t.Fatalf("live partition has cleanup.policy %q", p.Config().CleanupPolicy)
				}
			},
		},
		{
			name: "append per broker starts from the cluster default", setup: withDynamic(metadata.ClusterDefault, "log.cleanup.policy", "compact"),
			req: incrementalReq(false, brokerResource, "1", configOp{opAppend, "log.cleanup.policy", "delete"}, configOp{opSubtract, "log.cleanup.policy", "compact"}),
			want: func(t *testing.T, s *scene, _ *kmsg.IncrementalAlterConfigsResponse) {
				wantDynamic(t, s, 1, "log.cleanup.policy", "delete")
			},
		},
		{
			name: "append to a key that is not a list", req: incrementalReq(false, brokerResource, "1", configOp{opAppend, "log.retention.ms", "5"}),
			codes: []int16{codeInvalidConfig}, want: func(t *testing.T, s *scene, _ *kmsg.IncrementalAlterConfigsResponse) { wantDynamic(t, s, 1) },
		},
		{
			name: "static key", req: incrementalReq(false, brokerResource, "1", configOp{opSet, "log.retention.ms", "1000"}, configOp{opSet, "log.cleaner.enable", "false"}),
			codes: []int16{codeInvalidRequest},
			want: func(t *testing.T, s *scene, r *kmsg.IncrementalAlterConfigsResponse) {
				wantMessage(t, true, r.Resources[0].ErrorMessage, "Cannot update these configs dynamically: Set(log.cleaner.enable)")
				wantDynamic(t, s, 1)
			},
		},
		{
			name: "invalid value", req: incrementalReq(false, brokerResource, "", configOp{opSet, "num.replica.fetchers", "0"}),
			codes: []int16{codeInvalidConfig}, want: func(t *testing.T, s *scene, _ *kmsg.IncrementalAlterConfigsResponse) {
				wantDynamic(t, s, metadata.ClusterDefault)
			},
		},
		{
			// Kafka's rule for thread counts changed at run time: at least
			// 1, at least half and at most double the current value.
			name: "thread count more than doubled", req: incrementalReq(false, brokerResource, "1", configOp{opSet, "log.cleaner.threads", "3"}),
			codes: []int16{codeInvalidConfig},
			want: func(t *testing.T, s *scene, r *kmsg.IncrementalAlterConfigsResponse) {
				wantMessage(t, true, r.Resources[0].ErrorMessage, "double the current value 1")
				wantDynamic(t, s, 1)
			},
		},
		{
			name: "no thread", req: incrementalReq(false, brokerResource, "", configOp{opSet, "log.cleaner.threads", "0"}),
			codes: []int16{codeInvalidConfig}, want: func(t *testing.T, s *scene, _ *kmsg.IncrementalAlterConfigsResponse) {
				wantDynamic(t, s, metadata.ClusterDefault)
			},
		},
		{
			name: "validate only", req: incrementalReq(true, brokerResource, "1", configOp{opSet, "log.cleaner.threads", "2"}),
			want: func(t *testing.T, s *scene, _ *kmsg.IncrementalAlterConfigsResponse) { wantDynamic(t, s, 1) },
		},
		{
			name: "another broker", req: incrementalReq(false, brokerResource, "2", configOp{opSet, "log.cleaner.threads", "2"}),
			want: func(t *testing.T, s *scene, _ *kmsg.IncrementalAlterConfigsResponse) {
				wantDynamic(t, s, 2, "log.cleaner.threads", "2")
				if n := s.env.cfg().LogCleanerThreads; n != 1 {
					t.Fatalf("this broker took another's log.cleaner.threads: %d", n)
				}
			},
		},
		{name: "broker name not a number", req: incrementalReq(false, brokerResource, "x", configOp{opSet, "log.retention.ms", "1"}), codes: []int16{codeInvalidRequest}},
	})
}
