package handler

import (
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Tables of the config APIs: DescribeConfigs, AlterConfigs,
// IncrementalAlterConfigs.

const (
	topicResource  = kmsg.ConfigResourceTypeTopic
	brokerResource = kmsg.ConfigResourceTypeBroker
	groupResource  = kmsg.ConfigResourceType(32) // GROUP (KIP-848 group configs): not served
)

// withConfiguredTopic creates topic t with overrides (key, value pairs).
func withConfiguredTopic(configs ...string) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		kv := map[string]string{}
		for i := 0; i+1 < len(configs); i += 2 {
			kv[configs[i]] = configs[i+1]
		}
		s.createTopic(t, "t", 1, kv)
	}
}

// wantOverrides checks topic t's stored overrides (nil: none).
func wantOverrides(t *testing.T, s *scene, want map[string]string) {
	t.Helper()
	topic, ok := s.env.Cache.Topic("t")
	if !ok {
		t.Fatal("topic t is gone")
	}
	if len(topic.Configs) != len(want) || !maps.Equal(topic.Configs, want) {
		t.Fatalf("overrides %v, want %v", topic.Configs, want)
	}
}

// describeReq asks for one resource; names nil asks for every key.
func describeReq(typ kmsg.ConfigResourceType, name string, names ...string) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.ConfigNames = typ, name, names
		req.Resources = append(req.Resources, rr)
		req.IncludeSynonyms, req.IncludeDocumentation = true, true
		return req
	}
}

// described returns the entry of key in the first resource.
func described(t *testing.T, r *kmsg.DescribeConfigsResponse, key string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	for _, c := range r.Resources[0].Configs {
		if c.Name == key {
			return c
		}
	}
	t.Fatalf("%s not described", key)
	return kmsg.DescribeConfigsResponseResourceConfig{}
}

// wantDescribed checks a described key's value and where it comes from
// (v0 knows only whether it is a default).
func wantDescribed(t *testing.T, r *kmsg.DescribeConfigsResponse, key, value string, source kmsg.ConfigSource) {
	t.Helper()
	c := described(t, r, key)
	if c.Value == nil || *c.Value != value {
		t.Fatalf("%s = %v, want %s", key, msgString(c.Value), value)
	}
	if r.Version == 0 {
		if c.IsDefault != (source == kmsg.ConfigSourceDefaultConfig) {
			t.Fatalf("%s default %v, want source %v", key, c.IsDefault, source)
		}
		return
	}
	if c.Source != source {
		t.Fatalf("%s source %v, want %v", key, c.Source, source)
	}
	if (len(c.ConfigSynonyms) > 0 || source != kmsg.ConfigSourceDefaultConfig) &&
		(len(c.ConfigSynonyms) == 0 || c.ConfigSynonyms[0].Source != source) {
		t.Fatalf("%s synonyms %+v, want its own source first", key, c.ConfigSynonyms)
	}
	if r.Version >= 3 && (c.Documentation == nil || *c.Documentation == "") {
		t.Fatalf("%s has no documentation", key)
	}
}

func TestDescribeConfigs(t *testing.T) {
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.DescribeConfigsResponse]{
		{
			name: "topic", setup: withConfiguredTopic("retention.ms", "1000"), req: describeReq(topicResource, "t"),
			scene: sceneOpts{config: map[string]string{"log.segment.bytes": "1048576"}},
			want: func(t *testing.T, _ *scene, r *kmsg.DescribeConfigsResponse) {
				wantDescribed(t, r, "retention.ms", "1000", kmsg.ConfigSourceDynamicTopicConfig)
				wantDescribed(t, r, "segment.bytes", "1048576", kmsg.ConfigSourceStaticBrokerConfig)
				wantDescribed(t, r, "cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig)
				if r.Version >= 3 && described(t, r, "retention.ms").ConfigType != kmsg.ConfigTypeLong {
					t.Fatal("retention.ms is not described as a LONG")
				}
			},
		},
		{
			name: "topic, some keys", setup: withConfiguredTopic(), req: describeReq(topicResource, "t", "retention.ms", "cleanup.policy", "no.such.key"),
			want: func(t *testing.T, _ *scene, r *kmsg.DescribeConfigsResponse) {
				if n := len(r.Resources[0].Configs); n != 2 {
					t.Fatalf("%d keys described, want the 2 known ones asked for", n)
				}
			},
		},
		{name: "unknown topic", req: describeReq(topicResource, "nope"), codes: []int16{codeUnknownTopic}},
		{
			name: "broker", req: describeReq(brokerResource, "1"),
			scene: sceneOpts{config: map[string]string{"log.retention.ms": "5000"}},
			want: func(t *testing.T, _ *scene, r *kmsg.DescribeConfigsResponse) {
				c := described(t, r, "log.retention.ms")
				if c.Value == nil || *c.Value != "5000" || c.ReadOnly {
					t.Fatalf("log.retention.ms described as %+v, want 5000, dynamic (not read-only)", c)
				}
				if r.Version >= 1 && c.Source != kmsg.ConfigSourceStaticBrokerConfig {
					t.Fatalf("log.retention.ms source %v", c.Source)
				}
				if c := described(t, r, "node.id"); !c.ReadOnly {
					t.Fatal("node.id is not read-only")
				}
				if key := described(t, r, "remote.log.storage.s3.secret.key"); !key.IsSensitive || key.Value != nil {
					t.Fatalf("a secret is described as %+v", key)
				}
			},
		},
		{name: "other broker", req: describeReq(brokerResource, "2"), codes: []int16{codeInvalidRequest}},
		{name: "broker name not a number", req: describeReq(brokerResource, "one"), codes: []int16{codeInvalidRequest}},
		{name: "unsupported resource type", req: describeReq(groupResource, "g"), codes: []int16{codeInvalidRequest}},
	})
}

// alterReq replaces one resource's overrides (key, value pairs).
func alterReq(validateOnly bool, typ kmsg.ConfigResourceType, name string, configs ...string) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		for i := 0; i+1 < len(configs); i += 2 {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		return req
	}
}

// unchanged is a check that topic t kept retention.ms=1000 alone.
func unchanged[R kmsg.Response](t *testing.T, s *scene, _ R) {
	wantOverrides(t, s, map[string]string{"retention.ms": "1000"})
}

func TestAlterConfigs(t *testing.T) {
	topic := withConfiguredTopic("retention.ms", "1000")
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.AlterConfigsResponse]{
		{
			name: "replace overrides", setup: topic, req: alterReq(false, topicResource, "t", "segment.ms", "60000", "cleanup.policy", "compact"),
			want: func(t *testing.T, s *scene, _ *kmsg.AlterConfigsResponse) {
				wantOverrides(t, s, map[string]string{"segment.ms": "60000", "cleanup.policy": "compact"})
				p, _ := s.env.Partitions.Get("t", 0)
				if c := p.Config(); c.SegmentMs != 60000 || c.RetentionMs == 1000 {
					t.Fatalf("live partition has segment.ms %d, retention.ms %d", c.SegmentMs, c.RetentionMs)
				}
			},
		},
		{
			name: "clear overrides", setup: topic, req: alterReq(false, topicResource, "t"),
			want: func(t *testing.T, s *scene, _ *kmsg.AlterConfigsResponse) { wantOverrides(t, s, nil) },
		},
		{name: "unknown topic", req: alterReq(false, topicResource, "nope", "retention.ms", "1"), codes: []int16{codeUnknownTopic}},
		{
			name: "unknown key", setup: topic, req: alterReq(false, topicResource, "t", "retention.msx", "1"),
			codes: []int16{codeInvalidConfig},
			want: func(t *testing.T, s *scene, r *kmsg.AlterConfigsResponse) {
				wantMessage(t, true, r.Resources[0].ErrorMessage, "retention.msx")
				unchanged(t, s, r)
			},
		},
		{name: "invalid value", setup: topic, req: alterReq(false, topicResource, "t", "min.insync.replicas", "0"), codes: []int16{codeInvalidConfig}, want: unchanged[*kmsg.AlterConfigsResponse]},
		{name: "validate only", setup: topic, req: alterReq(true, topicResource, "t", "segment.ms", "60000"), want: unchanged[*kmsg.AlterConfigsResponse]},
		{name: "validate only, invalid value", setup: topic, req: alterReq(true, topicResource, "t", "segment.ms", "0"), codes: []int16{codeInvalidConfig}},
		{name: "unsupported resource type", req: alterReq(false, groupResource, "g", "x", "1"), codes: []int16{codeInvalidRequest}},
		{
			name: "resource named twice", setup: topic,
			req: func(t *testing.T, s *scene) kmsg.Request {
				req := alterReq(false, topicResource, "t", "segment.ms", "60000")(t, s).(*kmsg.AlterConfigsRequest)
				req.Resources = append(req.Resources, req.Resources[0])
				return req
			},
			codes: []int16{codeInvalidRequest, codeInvalidRequest}, want: unchanged[*kmsg.AlterConfigsResponse],
		},
	})
}

// configOp is one IncrementalAlterConfigs operation.
type configOp struct {
	op   kmsg.IncrementalAlterConfigOp
	name string
	val  string
}

var (
	opSet      = kmsg.IncrementalAlterConfigOpSet
	opDelete   = kmsg.IncrementalAlterConfigOpDelete
	opAppend   = kmsg.IncrementalAlterConfigOpAppend
	opSubtract = kmsg.IncrementalAlterConfigOpSubtract
)

func incrementalReq(validateOnly bool, typ kmsg.ConfigResourceType, name string, ops ...configOp) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		for _, o := range ops {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = o.name, o.op, kmsg.StringPtr(o.val)
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		return req
	}
}

func TestIncrementalAlterConfigs(t *testing.T) {
	topic := withConfiguredTopic("retention.ms", "1000")
	overrides := func(kv ...string) func(*testing.T, *scene, *kmsg.IncrementalAlterConfigsResponse) {
		return func(t *testing.T, s *scene, _ *kmsg.IncrementalAlterConfigsResponse) {
			want := map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				want[kv[i]] = kv[i+1]
			}
			wantOverrides(t, s, want)
		}
	}
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.IncrementalAlterConfigsResponse]{
		{
			name: "set keeps the others", setup: topic, req: incrementalReq(false, topicResource, "t", configOp{opSet, "segment.ms", "60000"}),
			want: func(t *testing.T, s *scene, r *kmsg.IncrementalAlterConfigsResponse) {
				overrides("retention.ms", "1000", "segment.ms", "60000")(t, s, r)
				if p, _ := s.env.Partitions.Get("t", 0); p.Config().SegmentMs != 60000 {
					t.Fatalf("live partition has segment.ms %d", p.Config().SegmentMs)
				}
			},
		},
		{name: "delete", setup: topic, req: incrementalReq(false, topicResource, "t", configOp{opDelete, "retention.ms", ""}), want: overrides()},
		{name: "delete an unset key", setup: topic, req: incrementalReq(false, topicResource, "t", configOp{opDelete, "segment.ms", ""}), want: overrides("retention.ms", "1000")},
		{
			name: "append starts from the default", setup: topic,
			req:  incrementalReq(false, topicResource, "t", configOp{opAppend, "cleanup.policy", "compact"}),
			want: overrides("retention.ms", "1000", "cleanup.policy", "delete,compact"),
		},
		{
			name: "append and subtract", setup: withConfiguredTopic("cleanup.policy", "compact"),
			req: incrementalReq(false, topicResource, "t",
				configOp{opAppend, "cleanup.policy", "delete"}, configOp{opSubtract, "cleanup.policy", "compact"}),
			want: overrides("cleanup.policy", "delete"),
		},
		{
			name: "append to a key that is not a list", setup: topic,
			req:   incrementalReq(false, topicResource, "t", configOp{opAppend, "retention.ms", "5"}),
			codes: []int16{codeInvalidConfig}, want: overrides("retention.ms", "1000"),
		},
		{
			name: "unknown key", setup: topic, req: incrementalReq(false, topicResource, "t", configOp{opSet, "retention.msx", "1"}),
			codes: []int16{codeInvalidConfig},
			want: func(t *testing.T, s *scene, r *kmsg.IncrementalAlterConfigsResponse) {
				wantMessage(t, true, r.Resources[0].ErrorMessage, "retention.msx")
				overrides("retention.ms", "1000")(t, s, r)
			},
		},
		{
			name: "invalid value", setup: topic, req: incrementalReq(false, topicResource, "t", configOp{opSet, "cleanup.policy", "shred"}),
			codes: []int16{codeInvalidConfig}, want: overrides("retention.ms", "1000"),
		},
		{
			name: "invalid together", setup: topic,
			req: incrementalReq(false, topicResource, "t",
				configOp{opSet, "min.compaction.lag.ms", "10"}, configOp{opSet, "max.compaction.lag.ms", "5"}),
			codes: []int16{codeInvalidConfig}, want: overrides("retention.ms", "1000"),
		},
		{
			name: "validate only", setup: topic, req: incrementalReq(true, topicResource, "t", configOp{opSet, "segment.ms", "60000"}),
			want: overrides("retention.ms", "1000"),
		},
		{name: "unknown topic", req: incrementalReq(false, topicResource, "nope", configOp{opSet, "retention.ms", "1"}), codes: []int16{codeUnknownTopic}},
		{
			name: "resource named twice", setup: topic,
			req: func(t *testing.T, s *scene) kmsg.Request {
				req := incrementalReq(false, topicResource, "t", configOp{opSet, "segment.ms", "60000"})(t, s).(*kmsg.IncrementalAlterConfigsRequest)
				req.Resources = append(req.Resources, req.Resources[0])
				return req
			},
			codes: []int16{codeInvalidRequest, codeInvalidRequest}, want: overrides("retention.ms", "1000"),
		},
	})
}
