package handler

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
)

// Tables of the topic APIs: CreateTopics, DeleteTopics, CreatePartitions.

// newTopic is a CreateTopics entry; configs are key, value pairs.
func newTopic(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	return rt
}

// manualTopic is a CreateTopics entry with a replica list per partition.
func manualTopic(name string, replicas ...[]int32) kmsg.CreateTopicsRequestTopic {
	rt := newTopic(name, -1, -1)
	for p, rs := range replicas {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), rs
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	return rt
}

func createTopicsReq(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis, req.ValidateOnly, req.Topics = 5000, validateOnly, topics
		return req
	}
}

// withTopics is a setup creating topics of one partition each.
func withTopics(names ...string) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		for _, n := range names {
			s.createTopic(t, n, 1, nil)
		}
	}
}

// wantTopicServed checks that topic exists with that many partitions of rf
// replicas each and that the broker serves its replicas.
func wantTopicServed(t *testing.T, s *scene, name string, partitions, rf int) {
	t.Helper()
	topic, ok := s.env.Cache.Topic(name)
	if !ok {
		t.Fatalf("topic %s not created", name)
	}
	if len(topic.Partitions) != partitions {
		t.Fatalf("topic %s has %d partitions, want %d", name, len(topic.Partitions), partitions)
	}
	for i, st := range topic.Partitions {
		if len(st.Replicas) != rf {
			t.Fatalf("%s-%d replicas %v, want %d", name, i, st.Replicas, rf)
		}
		if _, ok := s.env.Partitions.Get(name, i); !ok && st.Replicas[0] == s.env.Self.ID {
			t.Fatalf("%s-%d is not served", name, i)
		}
	}
}

func wantTopicGone(t *testing.T, s *scene, name string) {
	t.Helper()
	if _, ok := s.env.Cache.Topic(name); ok {
		t.Fatalf("topic %s exists", name)
	}
	if _, ok := s.env.Partitions.Get(name, 0); ok {
		t.Fatalf("%s-0 is still served", name)
	}
}

func TestCreateTopics(t *testing.T) {
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.CreateTopicsResponse]{
		{
			name: "create", req: createTopicsReq(false, newTopic("t", 3, 1, "retention.ms", "1000")),
			want: func(t *testing.T, s *scene, r *kmsg.CreateTopicsResponse) {
				wantTopicServed(t, s, "t", 3, 1)
				if r.Version < 5 {
					return
				}
				rt := r.Topics[0]
				if rt.NumPartitions != 3 || rt.ReplicationFactor != 1 {
					t.Fatalf("answered %d partitions of rf %d", rt.NumPartitions, rt.ReplicationFactor)
				}
				var retention *kmsg.CreateTopicsResponseTopicConfig
				for i, c := range rt.Configs {
					if c.Name == "retention.ms" {
						retention = &rt.Configs[i]
					}
				}
				if retention == nil || retention.Value == nil || *retention.Value != "1000" || retention.Source != int8(kmsg.ConfigSourceDynamicTopicConfig) {
					t.Fatalf("retention.ms answered as %+v", retention)
				}
				if r.Version >= 7 && rt.TopicID != s.topicID("t") {
					t.Fatalf("topic id %x, the metadata has %x", rt.TopicID, s.topicID("t"))
				}
			},
		},
		{
			name: "defaults", since: 4, req: createTopicsReq(false, newTopic("t", -1, -1)),
			scene: sceneOpts{config: map[string]string{"num.partitions": "2"}},
			want: func(t *testing.T, s *scene, r *kmsg.CreateTopicsResponse) {
				wantTopicServed(t, s, "t", 2, 1)
				if r.Version >= 5 && (r.Topics[0].NumPartitions != 2 || r.Topics[0].ReplicationFactor != 1) {
					t.Fatalf("answered %+v", r.Topics[0])
				}
			},
		},
		{
			name: "replicated", scene: sceneOpts{brokers: 2}, req: createTopicsReq(false, newTopic("t", 4, 2)),
			want: func(t *testing.T, s *scene, _ *kmsg.CreateTopicsResponse) { wantTopicServed(t, s, "t", 4, 2) },
		},
		{
			name: "manual assignment", scene: sceneOpts{brokers: 2},
			req: createTopicsReq(false, manualTopic("t", []int32{2, 1}, []int32{1, 2})),
			want: func(t *testing.T, s *scene, _ *kmsg.CreateTopicsResponse) {
				wantTopicServed(t, s, "t", 2, 2)
				if st, _ := s.env.Cache.Partition("t", 0); st.Leader != 2 {
					t.Fatalf("t-0 led by %d, want the first replica 2", st.Leader)
				}
			},
		},
		{name: "empty name", req: createTopicsReq(false, newTopic("", 1, 1)), codes: []int16{codeInvalidTopic}},
		{name: "dot", req: createTopicsReq(false, newTopic(".", 1, 1)), codes: []int16{codeInvalidTopic}},
		{name: "dot dot", req: createTopicsReq(false, newTopic("..", 1, 1)), codes: []int16{codeInvalidTopic}},
		{name: "illegal character", req: createTopicsReq(false, newTopic("a/b", 1, 1)), codes: []int16{codeInvalidTopic}},
		{name: "name too long", req: createTopicsReq(false, newTopic(strings.Repeat("x", 250), 1, 1)), codes: []int16{codeInvalidTopic}},
		{
			name: "name of 249 characters", req: createTopicsReq(false, newTopic(strings.Repeat("x", 249), 1, 1)),
			want: func(t *testing.T, s *scene, _ *kmsg.CreateTopicsResponse) {
				wantTopicServed(t, s, strings.Repeat("x", 249), 1, 1)
			},
		},
		{
			// Kafka: '.' and '_' collide in metric names.
			name: "colliding name", setup: withTopics("a_b"), req: createTopicsReq(false, newTopic("a.b", 1, 1)),
			codes: []int16{codeInvalidTopic},
			want:  func(t *testing.T, s *scene, _ *kmsg.CreateTopicsResponse) { wantTopicGone(t, s, "a.b") },
		},
		{name: "existing topic", setup: withTopics("t"), req: createTopicsReq(false, newTopic("t", 1, 1)), codes: []int16{codeTopicAlreadyExists}},
		{
			// Internal topics are the broker's (FindCoordinator creates
			// __consumer_offsets with its own configuration).
			name: "internal topic", req: createTopicsReq(false, newTopic(group.TopicName, 1, 1, "cleanup.policy", "delete")),
			codes: []int16{codeInvalidRequest},
			want: func(t *testing.T, s *scene, r *kmsg.CreateTopicsResponse) {
				wantMessage(t, r.Version >= 1, r.Topics[0].ErrorMessage, "internal topic "+group.TopicName)
				wantTopicGone(t, s, group.TopicName)
			},
		},
		{
			name: "transaction state topic", req: createTopicsReq(false, newTopic("__transaction_state", 1, 1)),
			codes: []int16{codeInvalidRequest},
			want: func(t *testing.T, s *scene, _ *kmsg.CreateTopicsResponse) {
				wantTopicGone(t, s, "__transaction_state")
			},
		},
		{name: "internal topic, validate only", since: 1, req: createTopicsReq(true, newTopic(group.TopicName, 1, 1)), codes: []int16{codeInvalidRequest}},
		{name: "zero partitions", req: createTopicsReq(false, newTopic("t", 0, 1)), codes: []int16{codeInvalidPartitions}},
		{name: "negative partitions", req: createTopicsReq(false, newTopic("t", -2, 1)), codes: []int16{codeInvalidPartitions}},
		{
			name: "replication factor zero", req: createTopicsReq(false, newTopic("t", 1, 0)), codes: []int16{codeInvalidRF},
			want: func(t *testing.T, _ *scene, r *kmsg.CreateTopicsResponse) {
				wantMessage(t, r.Version >= 1, r.Topics[0].ErrorMessage, "Replication factor must be larger than 0, or -1 to use the default value")
			},
		},
		{
			name: "replication factor below -1", req: createTopicsReq(false, newTopic("t", 1, -2)), codes: []int16{codeInvalidRF},
			want: func(t *testing.T, _ *scene, r *kmsg.CreateTopicsResponse) {
				wantMessage(t, r.Version >= 1, r.Topics[0].ErrorMessage, "must be larger than 0")
			},
		},
		{
			name: "more replicas than brokers", req: createTopicsReq(false, newTopic("t", 1, 2)), codes: []int16{codeInvalidRF},
			want: func(t *testing.T, _ *scene, r *kmsg.CreateTopicsResponse) {
				wantMessage(t, r.Version >= 1, r.Topics[0].ErrorMessage, "replication factor 2 is larger than the number of live brokers (1)")
			},
		},
		{
			// One topic is one atomic metadata write; Kafka's controller
			// refuses more than 10,000 records in one operation.
			name: "too many partitions", req: createTopicsReq(false, newTopic("t", 100_000, 1)), codes: []int16{kerr.PolicyViolation.Code},
			want: func(t *testing.T, s *scene, r *kmsg.CreateTopicsResponse) {
				wantMessage(t, r.Version >= 1, r.Topics[0].ErrorMessage, "at most 10000")
				wantTopicGone(t, s, "t")
			},
		},
		{name: "too many partitions, validate only", since: 1, req: createTopicsReq(true, newTopic("t", 10_001, 1)), codes: []int16{kerr.PolicyViolation.Code}},
		{
			name: "unknown config", req: createTopicsReq(false, newTopic("t", 1, 1, "retention.msx", "1")),
			codes: []int16{codeInvalidConfig},
			want: func(t *testing.T, s *scene, r *kmsg.CreateTopicsResponse) {
				wantMessage(t, r.Version >= 1, r.Topics[0].ErrorMessage, "retention.msx")
				wantTopicGone(t, s, "t")
			},
		},
		{
			name: "invalid config value", req: createTopicsReq(false, newTopic("t", 1, 1, "segment.bytes", "13")),
			codes: []int16{codeInvalidConfig},
			want: func(t *testing.T, _ *scene, r *kmsg.CreateTopicsResponse) {
				wantMessage(t, r.Version >= 1, r.Topics[0].ErrorMessage, "segment.bytes")
			},
		},
		{
			name: "null config value", since: 1,
			req: func(t *testing.T, s *scene) kmsg.Request {
				rt := newTopic("t", 1, 1)
				c := kmsg.NewCreateTopicsRequestTopicConfig()
				c.Name = "retention.ms"
				rt.Configs = append(rt.Configs, c)
				return createTopicsReq(false, rt)(t, s)
			},
			codes: []int16{codeInvalidConfig},
		},
		{
			name: "named twice", req: createTopicsReq(false, newTopic("t", 1, 1), newTopic("t", 2, 1), newTopic("u", 1, 1)),
			codes: []int16{codeInvalidRequest, codeInvalidRequest, 0},
			want: func(t *testing.T, s *scene, _ *kmsg.CreateTopicsResponse) {
				wantTopicGone(t, s, "t")
				wantTopicServed(t, s, "u", 1, 1)
			},
		},
		{
			name: "validate only", since: 1, req: createTopicsReq(true, newTopic("t", 3, 1)),
			want: func(t *testing.T, s *scene, r *kmsg.CreateTopicsResponse) {
				wantTopicGone(t, s, "t")
				if r.Version >= 5 && r.Topics[0].NumPartitions != 3 {
					t.Fatalf("validation answered %d partitions", r.Topics[0].NumPartitions)
				}
			},
		},
		{name: "validate only, existing", since: 1, setup: withTopics("t"), req: createTopicsReq(true, newTopic("t", 1, 1)), codes: []int16{codeTopicAlreadyExists}},
		{name: "validate only, bad config", since: 1, req: createTopicsReq(true, newTopic("t", 1, 1, "cleanup.policy", "shred")), codes: []int16{codeInvalidConfig}},
		{name: "validate only, bad replication factor", since: 1, req: createTopicsReq(true, newTopic("t", 1, 3)), codes: []int16{codeInvalidRF}},
		{
			name: "assignment with a partition count",
			req: func(t *testing.T, s *scene) kmsg.Request {
				rt := manualTopic("t", []int32{1})
				rt.NumPartitions = 1
				return createTopicsReq(false, rt)(t, s)
			},
			codes: []int16{codeInvalidRequest},
		},
		{name: "assignment to an unknown broker", req: createTopicsReq(false, manualTopic("t", []int32{9})), codes: []int16{codeInvalidAssignment}},
		{name: "assignment with an empty replica list", req: createTopicsReq(false, manualTopic("t", []int32{})), codes: []int16{codeInvalidAssignment}},
		{
			name: "assignment naming a broker twice", scene: sceneOpts{brokers: 2},
			req: createTopicsReq(false, manualTopic("t", []int32{1, 1})), codes: []int16{codeInvalidAssignment},
		},
		{
			name: "assignment of uneven replication", scene: sceneOpts{brokers: 2},
			req: createTopicsReq(false, manualTopic("t", []int32{1, 2}, []int32{1})), codes: []int16{codeInvalidAssignment},
		},
		{
			name: "assignment with a gap",
			req: func(t *testing.T, s *scene) kmsg.Request {
				rt := manualTopic("t", []int32{1}, []int32{1})
				rt.ReplicaAssignment[1].Partition = 2
				return createTopicsReq(false, rt)(t, s)
			},
			codes: []int16{codeInvalidAssignment},
		},
		{
			name: "assignment naming a partition twice",
			req: func(t *testing.T, s *scene) kmsg.Request {
				rt := manualTopic("t", []int32{1}, []int32{1})
				rt.ReplicaAssignment[1].Partition = 0
				return createTopicsReq(false, rt)(t, s)
			},
			codes: []int16{codeInvalidAssignment},
		},
	})
}

// wantMessage checks that an error message (where the version has one)
// names what it should.
func wantMessage(t *testing.T, hasMessage bool, msg *string, contains string) {
	t.Helper()
	if hasMessage && (msg == nil || !strings.Contains(*msg, contains)) {
		t.Fatalf("error message %v does not name %q", msgString(msg), contains)
	}
}

func msgString(msg *string) string {
	if msg == nil {
		return "<nil>"
	}
	return *msg
}

// deleteTopicsReq names topics by name (v0-5 TopicNames, v6+ Topics).
func deleteTopicsReq(names ...string) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis = 5000
		req.TopicNames = names
		for _, n := range names {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
}

// deleteTopicsByID names topics by id (v6+); id names the topic whose id
// to send, or is a made-up id when no such topic exists.
func deleteTopicsByID(names ...string) func(*testing.T, *scene) kmsg.Request {
	return func(t *testing.T, s *scene) kmsg.Request {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis = 5000
		for _, n := range names {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			if topic, ok := s.env.Cache.Topic(n); ok {
				rt.TopicID = topic.ID
			} else {
				rt.TopicID = [16]byte{0xde, 0xad}
			}
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
}

func TestDeleteTopics(t *testing.T) {
	gone := func(names ...string) func(*testing.T, *scene, *kmsg.DeleteTopicsResponse) {
		return func(t *testing.T, s *scene, _ *kmsg.DeleteTopicsResponse) {
			for _, n := range names {
				wantTopicGone(t, s, n)
			}
		}
	}
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.DeleteTopicsResponse]{
		{name: "delete", setup: withTopics("t", "u"), req: deleteTopicsReq("t", "u"), want: gone("t", "u")},
		{name: "unknown topic", setup: withTopics("t"), req: deleteTopicsReq("nope", "t"), codes: []int16{codeUnknownTopic, 0}, want: gone("t")},
		{
			// Kafka deletes an internal topic too (with DELETE on it);
			// the broker creates it again on the next FindCoordinator.
			name: "internal topic", scene: sceneOpts{groups: true}, req: deleteTopicsReq(group.TopicName), want: gone(group.TopicName),
		},
		{
			name: "by id", since: 6, setup: withTopics("t"), req: deleteTopicsByID("t"),
			want: func(t *testing.T, s *scene, r *kmsg.DeleteTopicsResponse) {
				if r.Topics[0].Topic == nil || *r.Topics[0].Topic != "t" {
					t.Fatalf("answered topic %v, want its name t", msgString(r.Topics[0].Topic))
				}
				wantTopicGone(t, s, "t")
			},
		},
		{name: "unknown id", since: 6, req: deleteTopicsByID("nope"), codes: []int16{kerr.UnknownTopicID.Code}},
		{
			name: "name and id", since: 6, setup: withTopics("t"),
			req: func(t *testing.T, s *scene) kmsg.Request {
				req := deleteTopicsReq("t")(t, s).(*kmsg.DeleteTopicsRequest)
				req.Topics[0].TopicID = s.topicID("t")
				return req
			},
			codes: []int16{codeInvalidRequest},
			want:  func(t *testing.T, s *scene, _ *kmsg.DeleteTopicsResponse) { wantTopicServed(t, s, "t", 1, 1) },
		},
		{
			name: "neither name nor id", since: 6,
			req: func(*testing.T, *scene) kmsg.Request {
				req := kmsg.NewPtrDeleteTopicsRequest()
				req.Topics = append(req.Topics, kmsg.NewDeleteTopicsRequestTopic())
				return req
			},
			codes: []int16{codeInvalidRequest},
		},
		{
			name: "named twice", setup: withTopics("t", "u"), req: deleteTopicsReq("t", "t", "u"),
			codes: []int16{codeInvalidRequest, codeInvalidRequest, 0},
			want: func(t *testing.T, s *scene, _ *kmsg.DeleteTopicsResponse) {
				wantTopicServed(t, s, "t", 1, 1)
				wantTopicGone(t, s, "u")
			},
		},
		{
			name: "recreate after delete", setup: withTopics("t"), req: deleteTopicsReq("t"),
			want: func(t *testing.T, s *scene, _ *kmsg.DeleteTopicsResponse) {
				s.createTopic(t, "t", 2, nil)
				wantTopicServed(t, s, "t", 2, 1)
			},
		},
	})
}

// newPartitions is a CreatePartitions entry; assignment, when given, is
// one replica list per new partition.
func newPartitions(topic string, count int32, assignment ...[]int32) kmsg.CreatePartitionsRequestTopic {
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	for _, rs := range assignment {
		a := kmsg.NewCreatePartitionsRequestTopicAssignment()
		a.Replicas = rs
		rt.Assignment = append(rt.Assignment, a)
	}
	return rt
}

func createPartitionsReq(validateOnly bool, topics ...kmsg.CreatePartitionsRequestTopic) func(*testing.T, *scene) kmsg.Request {
	return func(*testing.T, *scene) kmsg.Request {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis, req.ValidateOnly, req.Topics = 5000, validateOnly, topics
		return req
	}
}

func TestCreatePartitions(t *testing.T) {
	partitions := func(topic string, n, rf int) func(*testing.T, *scene, *kmsg.CreatePartitionsResponse) {
		return func(t *testing.T, s *scene, _ *kmsg.CreatePartitionsResponse) { wantTopicServed(t, s, topic, n, rf) }
	}
	twoReplicas := func(t *testing.T, s *scene) {
		req := createTopicsReq(false, newTopic("t", 1, 2))(t, s)
		wantCodes(t, errorCodes(s.do(t, req).(*kmsg.CreateTopicsResponse)), nil)
	}
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.CreatePartitionsResponse]{
		{name: "grow", setup: withTopics("t"), req: createPartitionsReq(false, newPartitions("t", 3)), want: partitions("t", 3, 1)},
		{
			name: "grow replicated", scene: sceneOpts{brokers: 2}, setup: twoReplicas,
			req: createPartitionsReq(false, newPartitions("t", 4)), want: partitions("t", 4, 2),
		},
		{
			name: "manual assignment", scene: sceneOpts{brokers: 2}, setup: twoReplicas,
			req: createPartitionsReq(false, newPartitions("t", 3, []int32{2, 1}, []int32{1, 2})),
			want: func(t *testing.T, s *scene, _ *kmsg.CreatePartitionsResponse) {
				wantTopicServed(t, s, "t", 3, 2)
				if st, _ := s.env.Cache.Partition("t", 1); st.Leader != 2 {
					t.Fatalf("t-1 led by %d, want 2", st.Leader)
				}
			},
		},
		{name: "unknown topic", req: createPartitionsReq(false, newPartitions("nope", 2)), codes: []int16{codeUnknownTopic}},
		{name: "same count", setup: withTopics("t"), req: createPartitionsReq(false, newPartitions("t", 1)), codes: []int16{codeInvalidPartitions}},
		{
			name: "too many new partitions", setup: withTopics("t"), req: createPartitionsReq(false, newPartitions("t", 10_002)),
			codes: []int16{kerr.PolicyViolation.Code}, want: partitions("t", 1, 1),
		},
		{
			name: "fewer", setup: func(t *testing.T, s *scene) { s.createTopic(t, "t", 3, nil) },
			req: createPartitionsReq(false, newPartitions("t", 2)), codes: []int16{codeInvalidPartitions},
			want: partitions("t", 3, 1),
		},
		{
			name: "validate only", setup: withTopics("t"), req: createPartitionsReq(true, newPartitions("t", 3)),
			want: partitions("t", 1, 1),
		},
		{
			name: "validate only, same count", setup: withTopics("t"),
			req: createPartitionsReq(true, newPartitions("t", 1)), codes: []int16{codeInvalidPartitions},
		},
		{
			name: "assignments not matching the count", setup: withTopics("t"),
			req:   createPartitionsReq(false, newPartitions("t", 3, []int32{1})),
			codes: []int16{codeInvalidAssignment}, want: partitions("t", 1, 1),
		},
		{
			name: "assignment to an unknown broker", setup: withTopics("t"),
			req: createPartitionsReq(false, newPartitions("t", 2, []int32{9})), codes: []int16{codeInvalidAssignment},
		},
		{
			name: "assignment of another replication factor", scene: sceneOpts{brokers: 2}, setup: withTopics("t"),
			req: createPartitionsReq(false, newPartitions("t", 2, []int32{1, 2})), codes: []int16{codeInvalidAssignment},
			want: partitions("t", 1, 1),
		},
		{
			name: "assignment naming a broker twice", scene: sceneOpts{brokers: 2}, setup: twoReplicas,
			req: createPartitionsReq(false, newPartitions("t", 2, []int32{1, 1})), codes: []int16{codeInvalidAssignment},
		},
		{
			name: "named twice", setup: withTopics("t", "u"),
			req:   createPartitionsReq(false, newPartitions("t", 2), newPartitions("t", 3), newPartitions("u", 2)),
			codes: []int16{codeInvalidRequest, codeInvalidRequest, 0},
			want: func(t *testing.T, s *scene, _ *kmsg.CreatePartitionsResponse) {
				wantTopicServed(t, s, "t", 1, 1)
				wantTopicServed(t, s, "u", 2, 1)
			},
		},
	})
}
