package handler

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/metadata"
)

type metadataRow = apiRow[*kmsg.MetadataResponse]

func TestMetadata(t *testing.T) {
	runRows(t, tableOpts{}, metadataRows())
}

func metadataRows() []metadataRow {
	noAutoCreate := sceneOpts{config: map[string]string{"auto.create.topics.enable": "false"}}
	threePartitions := sceneOpts{config: map[string]string{"num.partitions": "3"}}
	return []metadataRow{
		{
			// v0 has no null list: an empty one asks for every topic.
			name:     "every topic",
			versions: []int16{0, 1, 12},
			setup:    steps(withTopic("u", 1, nil), withTopic("t", 2, nil)),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return metadataReq(nil) },
			want: checks(wantTopicNames("t", "u"), wantCluster([]int32{1}),
				wantTopic("t", 0, []int32{0, 1}), wantTopic("u", 0, []int32{0})),
		},
		{
			name:     "an empty list asks for none",
			versions: []int16{1, 12},
			setup:    withTopic("t", 1, nil),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return metadataReq([]string{}) },
			want:     checks(wantTopicNames(), wantCluster([]int32{1})),
		},
		{
			name:  "a named topic",
			setup: steps(withTopic("t", 1, nil), withTopic("u", 1, nil)),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return metadataReq([]string{"t"}) },
			want: checks(wantTopicNames("t"), wantTopic("t", 0, []int32{0}),
				wantPartition("t", 0, 0, 1, 0, []int32{1}, []int32{1})),
		},
		{
			name: "leaders and epochs and replicas and ISR",
			setup: steps(withPeer(2, map[string]string{"broker.rack": "r2"}),
				withAssignedTopic("t", map[int32][]int32{0: {1, 2}, 1: {2, 1}}, nil), bumpEpoch("t", 1),
				withState("t", 0, func(st *metadata.PartitionState) { st.ISR = []int32{1} })),
			req: func(_ *testing.T, s *scene) kmsg.Request { return metadataReq([]string{"t"}) },
			want: checks(wantCluster([]int32{1, 2}),
				wantPartition("t", 0, 0, 1, 0, []int32{1, 2}, []int32{1}),
				wantPartition("t", 1, 0, 2, 1, []int32{2, 1}, []int32{2, 1}),
				func(t *testing.T, s *scene, resp *kmsg.MetadataResponse) {
					if s.version < 1 {
						return
					}
					if b := resp.Brokers[1]; b.Rack == nil || *b.Rack != "r2" || resp.Brokers[0].Rack != nil {
						t.Errorf("racks %v, %v; want none and r2", resp.Brokers[0].Rack, b.Rack)
					}
				}),
		},
		{
			name:  "a partition without a leader",
			setup: steps(withTopic("t", 1, nil), withState("t", 0, func(st *metadata.PartitionState) { st.Leader = metadata.NoLeader })),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return metadataReq([]string{"t"}) },
			want:  wantPartition("t", 0, kerr.LeaderNotAvailable.Code, -1, 0, []int32{1}, []int32{1}),
		},
		{
			name:     "unknown topic without auto-creation",
			versions: []int16{0, 3, 4, 12},
			scene:    noAutoCreate,
			req:      func(_ *testing.T, s *scene) kmsg.Request { return metadataReq([]string{"nope"}) },
			want:     checks(wantTopic("nope", kerr.UnknownTopicOrPartition.Code, nil), wantNoTopic("nope")),
		},
		{
			// As Kafka's AutoTopicCreationManager (createTopicsInZk, the
			// mode that creates the topic before it answers): kafka-go's
			// TestConn reads a topic it just deleted and expects no
			// partitions.
			name:     "unknown topic auto-created",
			versions: []int16{0, 3, 4, 9, 10, 12},
			scene:    threePartitions,
			req:      func(_ *testing.T, s *scene) kmsg.Request { return metadataReq([]string{"new"}) },
			want:     wantAutoCreated("new", 3),
		},
		{
			name:     "an auto-created topic among known ones",
			versions: []int16{1, 12},
			setup:    withTopic("t", 1, nil),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return metadataReq([]string{"t", "new"}) },
			want:     checks(wantTopicNames("t", "new"), wantTopic("t", 0, []int32{0}), wantAutoCreated("new", 1)),
		},
		{
			// kafka-go's TestConn deletes a topic, reads it with Metadata
			// v1 or v6 (auto-creation allowed) and expects no partitions.
			name:     "a topic asked for right after its deletion is created again without partitions",
			versions: []int16{1, 6},
			setup: steps(withTopic("t", 1, nil), func(t *testing.T, s *scene) {
				req := kmsg.NewPtrDeleteTopicsRequest()
				req.SetVersion(4)
				req.TimeoutMillis = 5000
				req.TopicNames = []string{"t"}
				if code := s.do(t, req).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode; code != 0 {
					t.Fatalf("delete topic: error %d", code)
				}
			}),
			req:  func(_ *testing.T, s *scene) kmsg.Request { return metadataReq([]string{"t"}) },
			want: wantAutoCreated("t", 1),
		},
		{
			name:     "a produce to an unknown topic creates nothing",
			versions: []int16{12},
			scene:    threePartitions,
			setup: func(t *testing.T, s *scene) {
				req := produceReq(s, 1, "new", 0, batch("a"))
				req.SetVersion(9)
				if code := producePart(t, s.do(t, req).(*kmsg.ProduceResponse)).ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
					t.Fatalf("produce to an unknown topic: error %d, want UNKNOWN_TOPIC_OR_PARTITION", code)
				}
			},
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := metadataReq([]string{"new"})
				req.AllowAutoTopicCreation = false
				return req
			},
			want: checks(wantTopic("new", kerr.UnknownTopicOrPartition.Code, nil), wantNoTopic("new")),
		},
		{
			// The request's flag is v4+; older clients always allow it.
			name:     "a client forbidding auto-creation",
			versions: []int16{0, 3, 4, 12},
			scene:    threePartitions,
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := metadataReq([]string{"new"})
				req.AllowAutoTopicCreation = false
				return req
			},
			want: func(t *testing.T, s *scene, resp *kmsg.MetadataResponse) {
				if s.version >= 4 {
					checks(wantTopic("new", kerr.UnknownTopicOrPartition.Code, nil), wantNoTopic("new"))(t, s, resp)
				} else {
					wantAutoCreated("new", 3)(t, s, resp)
				}
			},
		},
		{
			name: "auto-creation of an invalid name",
			req:  func(_ *testing.T, s *scene) kmsg.Request { return metadataReq([]string{"no/slash"}) },
			want: checks(wantTopic("no/slash", kerr.InvalidTopicException.Code, nil), wantNoTopic("no/slash")),
		},
		{
			name:     "by topic id",
			versions: []int16{12},
			setup:    steps(withTopic("t", 2, nil), withTopic("u", 1, nil)),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return metadataByID(s.topicID("t")) },
			want: checks(wantTopicNames("t"), wantTopic("t", 0, []int32{0, 1}),
				func(t *testing.T, s *scene, resp *kmsg.MetadataResponse) {
					if resp.Topics[0].TopicID != s.topicID("t") {
						t.Errorf("topic id %x, want %x", resp.Topics[0].TopicID, s.topicID("t"))
					}
				}),
		},
		{
			name:     "by unknown topic id",
			versions: []int16{12},
			setup:    withTopic("t", 1, nil),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return metadataByID([16]byte{1}) },
			want: func(t *testing.T, s *scene, resp *kmsg.MetadataResponse) {
				if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicID.Code || resp.Topics[0].TopicID != [16]byte{1} {
					t.Errorf("topics %+v, want the id with UNKNOWN_TOPIC_ID", resp.Topics)
				}
			},
		},
		{
			name:     "by topic id before v12",
			versions: []int16{10, 11},
			setup:    withTopic("t", 1, nil),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return metadataByID(s.topicID("t")) },
			// As Kafka's KafkaApis.handleTopicMetadataRequest and
			// MetadataRequest.getErrorResponse.
			want: func(t *testing.T, s *scene, resp *kmsg.MetadataResponse) {
				if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code ||
					resp.Topics[0].TopicID != s.topicID("t") || len(resp.Brokers) != 0 {
					t.Errorf("topics %+v, %d brokers; want the id with INVALID_REQUEST and no brokers", resp.Topics, len(resp.Brokers))
				}
			},
		},
		{
			name:     "internal topics are flagged",
			versions: []int16{1, 12},
			scene:    sceneOpts{config: map[string]string{"offsets.topic.num.partitions": "1"}},
			setup:    steps(withOffsetsTopic, withTopic("__mine", 1, nil)),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return metadataReq(nil) },
			want: func(t *testing.T, s *scene, resp *kmsg.MetadataResponse) {
				for _, mt := range resp.Topics {
					if want := *mt.Topic == group.TopicName; mt.IsInternal != want {
						t.Errorf("%s: internal %v, want %v", *mt.Topic, mt.IsInternal, want)
					}
				}
			},
		},
		{
			// As Kafka's AutoTopicCreationManager: an internal topic gets
			// its own configuration, not the defaults of other topics.
			name:  "auto-created offsets topic",
			scene: sceneOpts{config: map[string]string{"offsets.topic.num.partitions": "2", "num.partitions": "3"}},
			req:   func(_ *testing.T, s *scene) kmsg.Request { return metadataReq([]string{group.TopicName}) },
			want: func(t *testing.T, s *scene, resp *kmsg.MetadataResponse) {
				if mt := metadataTopicOf(t, resp, group.TopicName); mt.ErrorCode != kerr.LeaderNotAvailable.Code || s.version >= 1 && !mt.IsInternal {
					t.Errorf("%s: error %d, internal %v; want LEADER_NOT_AVAILABLE, internal", group.TopicName, mt.ErrorCode, mt.IsInternal)
				}
				topic, ok := s.env.Cache.Topic(group.TopicName)
				if !ok || len(topic.Partitions) != 2 || topic.Configs["cleanup.policy"] != "compact" {
					t.Errorf("%s created with %d partitions and configs %v, want 2 and cleanup.policy=compact", group.TopicName, len(topic.Partitions), topic.Configs)
				}
			},
		},
		{
			// No transaction coordinator uses it yet, so it is not made.
			name: "transaction state topic is not auto-created",
			req:  func(_ *testing.T, s *scene) kmsg.Request { return metadataReq([]string{"__transaction_state"}) },
			want: checks(wantTopic("__transaction_state", kerr.UnknownTopicOrPartition.Code, nil), func(t *testing.T, s *scene, _ *kmsg.MetadataResponse) {
				if _, ok := s.env.Cache.Topic("__transaction_state"); ok {
					t.Error("__transaction_state was created")
				}
			}),
		},
		{
			name:     "authorized operations without an authorizer: all of them",
			versions: []int16{8, 10, 11, 12},
			setup:    withTopic("t", 1, nil),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := metadataReq([]string{"t"})
				req.IncludeTopicAuthorizedOperations, req.IncludeClusterAuthorizedOperations = true, true
				return req
			},
			want: func(t *testing.T, s *scene, resp *kmsg.MetadataResponse) {
				// Every operation Kafka supports on a topic, and on the
				// cluster (asked for up to v10 only).
				if got, want := resp.Topics[0].AuthorizedOperations, int32(1<<3|1<<4|1<<5|1<<6|1<<7|1<<8|1<<10|1<<11); got != want {
					t.Errorf("topic authorized operations %b, want %b", got, want)
				}
				want := int32(1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12)
				if s.version > 10 {
					want = -2147483648
				}
				if got := resp.AuthorizedOperations; got != want {
					t.Errorf("cluster authorized operations %b, want %b", got, want)
				}
			},
		},
	}
}

// metadataReq asks for topics (nil: all) and allows auto-creation.
func metadataReq(topics []string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	if topics != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
	}
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// metadataByID asks for one topic by id.
func metadataByID(id [16]byte) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.TopicID = id
	req.Topics = append(req.Topics, rt)
	return req
}

// metadataTopicOf is topic name of an answer.
func metadataTopicOf(t *testing.T, resp *kmsg.MetadataResponse, name string) kmsg.MetadataResponseTopic {
	t.Helper()
	for _, mt := range resp.Topics {
		if mt.Topic != nil && *mt.Topic == name {
			return mt
		}
	}
	t.Fatalf("no topic %q in the answer", name)
	return kmsg.MetadataResponseTopic{}
}

// wantTopicNames checks the topics of the answer, in order.
func wantTopicNames(names ...string) check[*kmsg.MetadataResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.MetadataResponse) {
		t.Helper()
		var got []string
		for _, mt := range resp.Topics {
			got = append(got, *mt.Topic)
		}
		if !slices.Equal(got, names) {
			t.Errorf("topics %q, want %q", got, names)
		}
	}
}

// wantTopic checks a topic's error code, its partitions (in order) and,
// from v10, its id.
func wantTopic(name string, code int16, partitions []int32) check[*kmsg.MetadataResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.MetadataResponse) {
		t.Helper()
		mt := metadataTopicOf(t, resp, name)
		var got []int32
		for _, mp := range mt.Partitions {
			got = append(got, mp.Partition)
		}
		if mt.ErrorCode != code || !slices.Equal(got, partitions) {
			t.Errorf("%s: error %d, partitions %v; want %d, %v", name, mt.ErrorCode, got, code, partitions)
		}
		if s.version >= 10 && mt.TopicID != s.topicID(name) {
			t.Errorf("%s: topic id %x, want %x", name, mt.TopicID, s.topicID(name))
		}
	}
}

// wantAutoCreated checks the answer for topic name that the request
// created, with n partitions: LEADER_NOT_AVAILABLE without partitions or
// topic id, as Kafka answers it, the partitions served here, and the next
// request (at the same version) seeing them led by broker 1.
func wantAutoCreated(name string, n int32) check[*kmsg.MetadataResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.MetadataResponse) {
		t.Helper()
		mt := metadataTopicOf(t, resp, name)
		if mt.ErrorCode != kerr.LeaderNotAvailable.Code || len(mt.Partitions) != 0 || mt.TopicID != [16]byte{} || mt.IsInternal {
			t.Errorf("%s: error %d, %d partitions, topic id %x, internal %v; want LEADER_NOT_AVAILABLE and nothing else",
				name, mt.ErrorCode, len(mt.Partitions), mt.TopicID, mt.IsInternal)
		}
		var idxs []int32
		for i := range n {
			idxs = append(idxs, i)
			if _, ok := s.env.Partitions.Get(name, i); !ok {
				t.Errorf("%s-%d is not served", name, i)
			}
		}
		next := metadataReq([]string{name})
		next.SetVersion(s.version)
		again := s.do(t, next).(*kmsg.MetadataResponse)
		wantTopic(name, 0, idxs)(t, s, again)
		for _, i := range idxs {
			wantPartition(name, i, 0, 1, 0, []int32{1}, []int32{1})(t, s, again)
		}
	}
}

// wantNoTopic checks that topic name was not created.
func wantNoTopic(name string) check[*kmsg.MetadataResponse] {
	return func(t *testing.T, s *scene, _ *kmsg.MetadataResponse) {
		t.Helper()
		if _, ok := s.env.Cache.Topic(name); ok {
			t.Errorf("topic %s was created", name)
		}
	}
}

// wantPartition checks one partition: error code, leader, leader epoch
// (v7+), replicas and ISR.
func wantPartition(name string, idx int32, code int16, leader, epoch int32, replicas, isr []int32) check[*kmsg.MetadataResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.MetadataResponse) {
		t.Helper()
		mt := metadataTopicOf(t, resp, name)
		i := slices.IndexFunc(mt.Partitions, func(mp kmsg.MetadataResponseTopicPartition) bool { return mp.Partition == idx })
		if i < 0 {
			t.Fatalf("%s: no partition %d", name, idx)
		}
		mp := mt.Partitions[i]
		epochOK := s.version < 7 || mp.LeaderEpoch == epoch
		if mp.ErrorCode != code || mp.Leader != leader || !epochOK || !slices.Equal(mp.Replicas, replicas) || !slices.Equal(mp.ISR, isr) {
			t.Errorf("%s-%d: error %d, leader %d, epoch %d, replicas %v, isr %v; want %d, %d, %d, %v, %v",
				name, idx, mp.ErrorCode, mp.Leader, mp.LeaderEpoch, mp.Replicas, mp.ISR, code, leader, epoch, replicas, isr)
		}
	}
}

// wantCluster checks the brokers (ids in order, as registered), and from
// the versions that carry them the controller (broker 1 while none is
// elected) and the cluster id.
func wantCluster(brokers []int32) check[*kmsg.MetadataResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.MetadataResponse) {
		t.Helper()
		var got []int32
		for _, b := range resp.Brokers {
			got = append(got, b.NodeID)
			if b.Host != "127.0.0.1" || b.Port != 9092+b.NodeID {
				t.Errorf("broker %d at %s:%d", b.NodeID, b.Host, b.Port)
			}
		}
		if !slices.Equal(got, brokers) {
			t.Errorf("brokers %v, want %v", got, brokers)
		}
		if s.version >= 1 && resp.ControllerID != 1 {
			t.Errorf("controller %d, want 1", resp.ControllerID)
		}
		if s.version >= 2 && (resp.ClusterID == nil || *resp.ClusterID != s.store.ClusterID()) {
			t.Errorf("cluster id %v, want %s", resp.ClusterID, s.store.ClusterID())
		}
	}
}
