package handler

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Tables of the partition limit (max.broker.partitions, capped by the
// open-file limit) as CreateTopics, CreatePartitions, auto-creation and
// AlterPartitionReassignments check it against every target broker's
// registration.

var codePolicy = kerr.PolicyViolation.Code

// limited is a scene of n brokers whose partition limit is limit.
func limited(n int, limit string) sceneOpts {
	return sceneOpts{brokers: n, config: map[string]string{"max.broker.partitions": limit}}
}

// withTopicOf creates topic of n partitions, replicated as rf.
func withTopicOf(topic string, n int32, rf int16) func(*testing.T, *scene) {
	return func(t *testing.T, s *scene) {
		resp := s.do(t, createTopicsReq(false, newTopic(topic, n, rf))(t, s)).(*kmsg.CreateTopicsResponse)
		wantCodes(t, errorCodes(resp), nil)
	}
}

func TestCreateTopicsPartitionLimit(t *testing.T) {
	refused := func(topic, says string) func(*testing.T, *scene, *kmsg.CreateTopicsResponse) {
		return func(t *testing.T, s *scene, r *kmsg.CreateTopicsResponse) {
			wantMessage(t, r.Version >= 1, r.Topics[0].ErrorMessage, says)
			wantMessage(t, r.Version >= 1, r.Topics[0].ErrorMessage, "max.broker.partitions")
			if _, ok := s.env.Cache.Topic(topic); ok {
				t.Fatalf("topic %s created beyond the limit", topic)
			}
		}
	}
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.CreateTopicsResponse]{
		{
			name: "up to the limit", scene: limited(1, "4"), req: createTopicsReq(false, newTopic("t", 4, 1)),
			want: func(t *testing.T, s *scene, _ *kmsg.CreateTopicsResponse) { wantTopicServed(t, s, "t", 4, 1) },
		},
		{
			name: "beyond the limit", scene: limited(1, "4"), req: createTopicsReq(false, newTopic("t", 5, 1)),
			codes: []int16{codePolicy}, want: refused("t", "broker 1 would host 5 partition replicas (0 now, 5 more); its limit is 4"),
		},
		{
			name: "counting what the broker hosts", scene: limited(1, "4"), setup: withTopics("a", "b"),
			req:   createTopicsReq(false, newTopic("t", 3, 1)),
			codes: []int16{codePolicy}, want: refused("t", "broker 1 would host 5 partition replicas (2 now, 3 more)"),
		},
		{
			name: "validate only", since: 1, scene: limited(1, "4"), req: createTopicsReq(true, newTopic("t", 5, 1)),
			codes: []int16{codePolicy}, want: refused("t", "its limit is 4"),
		},
		{
			name: "every replica counts", scene: limited(2, "2"), req: createTopicsReq(false, newTopic("t", 3, 2)),
			codes: []int16{codePolicy}, want: refused("t", "broker 1 would host 3 partition replicas"),
		},
		{
			// Broker 1 places the topic; broker 2's own, lower limit
			// (from its registration) refuses it.
			name: "another broker's limit", setup: withPeer(2, map[string]string{"max.broker.partitions": "1"}),
			req:   createTopicsReq(false, manualTopic("t", []int32{2}, []int32{2})),
			codes: []int16{codePolicy}, want: refused("t", "broker 2 would host 2 partition replicas (0 now, 2 more); its limit is 1"),
		},
		{
			name: "one topic of a request", scene: limited(1, "4"),
			req:   createTopicsReq(false, newTopic("ok", 2, 1), newTopic("big", 3, 1)),
			codes: []int16{0, codePolicy},
			want:  func(t *testing.T, s *scene, _ *kmsg.CreateTopicsResponse) { wantTopicServed(t, s, "ok", 2, 1) },
		},
	})
}

func TestCreatePartitionsPartitionLimit(t *testing.T) {
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.CreatePartitionsResponse]{
		{
			name: "up to the limit", scene: limited(1, "4"), setup: withTopicOf("t", 3, 1),
			req:  createPartitionsReq(false, newPartitions("t", 4)),
			want: func(t *testing.T, s *scene, _ *kmsg.CreatePartitionsResponse) { wantTopicServed(t, s, "t", 4, 1) },
		},
		{
			name: "beyond the limit", scene: limited(1, "4"), setup: withTopicOf("t", 3, 1),
			req: createPartitionsReq(false, newPartitions("t", 5)), codes: []int16{codePolicy},
			want: func(t *testing.T, s *scene, r *kmsg.CreatePartitionsResponse) {
				wantMessage(t, true, r.Topics[0].ErrorMessage, "broker 1 would host 5 partition replicas (3 now, 2 more); its limit is 4")
				wantTopicServed(t, s, "t", 3, 1)
			},
		},
		{
			name: "validate only", scene: limited(1, "4"), setup: withTopicOf("t", 3, 1),
			req: createPartitionsReq(true, newPartitions("t", 5)), codes: []int16{codePolicy},
		},
	})
}

func TestAutoCreatePartitionLimit(t *testing.T) {
	opts := sceneOpts{config: map[string]string{"max.broker.partitions": "2", "num.partitions": "2"}}
	topicCodes := func(r *kmsg.MetadataResponse) (codes []int16) {
		for _, t := range r.Topics {
			codes = append(codes, t.ErrorCode)
		}
		return codes
	}
	runRows(t, tableOpts{codes: codesOf(topicCodes)}, []apiRow[*kmsg.MetadataResponse]{
		{
			name: "beyond the limit", since: 4, scene: opts, setup: withTopics("a"),
			req:   func(*testing.T, *scene) kmsg.Request { return metadataReq([]string{"new"}) },
			codes: []int16{codePolicy},
			want: func(t *testing.T, s *scene, _ *kmsg.MetadataResponse) {
				if _, ok := s.env.Cache.Topic("new"); ok {
					t.Fatal("topic auto-created beyond the limit")
				}
			},
		},
	})
}

func TestReassignmentPartitionLimit(t *testing.T) {
	// t-0 on broker 1, on2-0 on broker 2, whose limit is 1.
	setup := steps(withPeer(2, map[string]string{"max.broker.partitions": "1"}), func(t *testing.T, s *scene) {
		resp := s.do(t, createTopicsReq(false, manualTopic("t", []int32{1}), manualTopic("on2", []int32{2}))(t, s)).(*kmsg.CreateTopicsResponse)
		wantCodes(t, errorCodes(resp), nil)
	})
	runRows(t, tableOpts{codes: errorCodes}, []apiRow[*kmsg.AlterPartitionAssignmentsResponse]{
		{
			name: "beyond the target's limit", setup: setup,
			req: reassignReq(reassignment{"t", 0, []int32{1, 2}}), codes: []int16{0, codePolicy},
			want: func(t *testing.T, s *scene, r *kmsg.AlterPartitionAssignmentsResponse) {
				wantMessage(t, true, r.Topics[0].Partitions[0].ErrorMessage, "broker 2 would host 2 partition replicas (1 now, 1 more); its limit is 1")
				wantPending(t, s, nil, nil)
			},
		},
		{
			name: "moving within the limit", setup: setup,
			req: reassignReq(reassignment{"on2", 0, []int32{2}}),
		},
	})
}
