package handler

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/metadata"
)

type deleteRecordsRow = apiRow[*kmsg.DeleteRecordsResponse]

func TestDeleteRecords(t *testing.T) {
	runRows(t, tableOpts{}, deleteRecordsRows())
}

func deleteRecordsRows() []deleteRecordsRow {
	four := withRecords("t", 0, batch("a"), batch("b"), batch("c"), batch("d"))
	written := steps(withTopic("t", 1, nil), four)
	return []deleteRecordsRow{
		{
			name:  "moves the log start",
			setup: written,
			req:   func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, 2) },
			want:  checks(wantDeleted(0, 2), wantLogStart("t", 0, 2)),
		},
		{
			name:  "-1 is the high watermark",
			setup: written,
			req:   func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, -1) },
			want:  checks(wantDeleted(0, 4), wantLogStart("t", 0, 4)),
		},
		{
			name:  "-1 below records not yet replicated",
			setup: steps(rf2(nil), four, followerReports(2, 0, 0)),
			req:   func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, -1) },
			want:  checks(wantDeleted(0, 0), wantLogStart("t", 0, 0)),
		},
		{
			name:  "offset past the high watermark",
			setup: written,
			req:   func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, 5) },
			want:  checks(wantDeleted(kerr.OffsetOutOfRange.Code, -1), wantLogStart("t", 0, 0)),
		},
		{
			name:  "offset past records not yet replicated",
			setup: steps(rf2(nil), four),
			req:   func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, 1) },
			want:  checks(wantDeleted(kerr.OffsetOutOfRange.Code, -1), wantLogStart("t", 0, 0)),
		},
		{
			name:  "negative offset other than -1",
			setup: written,
			req:   func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, -5) },
			want:  checks(wantDeleted(kerr.OffsetOutOfRange.Code, -1), wantLogStart("t", 0, 0)),
		},
		{
			name:  "offset below the log start leaves it",
			setup: steps(written, withDeletedBefore("t", 0, 3)),
			req:   func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, 1) },
			want:  checks(wantDeleted(0, 3), wantLogStart("t", 0, 3)),
		},
		{
			name:  "compacted topic",
			setup: steps(withTopic("t", 1, map[string]string{"cleanup.policy": "compact"}), withRecords("t", 0, keyedBatch("k", "v"))),
			req:   func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, 1) },
			want:  checks(wantDeleted(kerr.PolicyViolation.Code, -1), wantLogStart("t", 0, 0)),
		},
		{
			name:  "compacted and deleted topic",
			setup: steps(withTopic("t", 1, map[string]string{"cleanup.policy": "compact,delete"}), withRecords("t", 0, keyedBatch("k", "v"))),
			req:   func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, 1) },
			want:  checks(wantDeleted(0, 1), wantLogStart("t", 0, 1)),
		},
		{
			// Kafka's ReplicaManager.deleteRecordsOnLocalLog.
			name:  "internal topic",
			scene: sceneOpts{config: map[string]string{"offsets.topic.num.partitions": "1"}},
			setup: withOffsetsTopic,
			req:   func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq(group.TopicName, 0, -1) },
			want:  wantDeleted(kerr.InvalidTopicException.Code, -1),
		},
		{
			name: "unknown topic",
			req:  func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("nope", 0, 0) },
			want: wantDeleted(kerr.UnknownTopicOrPartition.Code, -1),
		},
		{
			name:  "unknown partition",
			setup: withTopic("t", 1, nil),
			req:   func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 1, 0) },
			want:  wantDeleted(kerr.UnknownTopicOrPartition.Code, -1),
		},
		{
			name:  "follower",
			setup: steps(withPeer(2, nil), withAssignedTopic("t", map[int32][]int32{0: {2, 1}}, nil)),
			req:   func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, 0) },
			want:  wantDeleted(kerr.NotLeaderForPartition.Code, -1),
		},
		{
			name:  "answers once every replica's log start passed the offset",
			setup: steps(rf2(nil), four, func(t *testing.T, s *scene) { s.followerFetch(t, 2, "t", 0, 4) }),
			req:   func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, 2) },
			want: checks(func(t *testing.T, s *scene, resp *kmsg.DeleteRecordsResponse) {
				if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.RequestTimedOut.Code {
					t.Errorf("error %d, want REQUEST_TIMED_OUT", code)
				}
			}, wantTook[*kmsg.DeleteRecordsResponse](deleteRecordsTimeout)),
		},
		{
			// Kafka's DelayedDeleteRecords, woken by the follower's fetch.
			name:   "answers when the follower reports the log start",
			setup:  steps(rf2(nil), four, followerReports(2, 4, 0)),
			req:    func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, 2) },
			during: followerReports(2, 4, 3),
			want:   checks(wantDeleted(0, 2), wantLogStart("t", 0, 2), wantTook[*kmsg.DeleteRecordsResponse](0)),
		},
		{
			name:   "a follower's log start short of the offset keeps it waiting",
			setup:  steps(rf2(nil), four, followerReports(2, 4, 0)),
			req:    func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, 3) },
			during: followerReports(2, 4, 2),
			want: checks(wantDeleted(kerr.RequestTimedOut.Code, 0), wantLogStart("t", 0, 3),
				wantTook[*kmsg.DeleteRecordsResponse](deleteRecordsTimeout)),
		},
		{
			name:  "a follower already past the offset answers at once",
			setup: steps(rf2(nil), four, followerReports(2, 4, 0), withDeletedBefore("t", 0, 3), followerReports(2, 4, 3)),
			req:   func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, 2) },
			want:  checks(wantDeleted(0, 3), wantTook[*kmsg.DeleteRecordsResponse](0)),
		},
		{
			name:   "a leader change ends the wait",
			setup:  steps(rf2(nil), four, followerReports(2, 4, 0)),
			req:    func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, 2) },
			during: withState("t", 0, func(st *metadata.PartitionState) { st.Leader, st.LeaderEpoch = 2, st.LeaderEpoch+1 }),
			want:   checks(wantDeleted(kerr.NotLeaderForPartition.Code, -1), wantTook[*kmsg.DeleteRecordsResponse](0)),
		},
	}
}

// deleteRecordsTimeout is the timeout of the requests of the table.
const deleteRecordsTimeout = 5 * time.Second

func deleteRecordsReq(topic string, idx int32, offset int64) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = int32(deleteRecordsTimeout.Milliseconds())
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = idx, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// followerReports is a step in which follower replica of t-0 fetches at
// offset, reporting logStart as its log start offset; the fetch does not
// wait.
func followerReports(replica int32, offset, logStart int64) step {
	return func(t *testing.T, s *scene) {
		t.Helper()
		req := fetchReq(s, fetchAt{"t", 0, offset})
		req.SetVersion(17)
		req.ReplicaID, req.ReplicaState.ID, req.MaxWaitMillis = replica, replica, 0
		req.Topics[0].Partitions[0].LogStartOffset = logStart
		if sp := fetchPart(t, s.do(t, req).(*kmsg.FetchResponse)); sp.ErrorCode != 0 {
			t.Fatalf("follower fetch: %v", kerr.ErrorForCode(sp.ErrorCode))
		}
	}
}

// wantDeleted checks the one partition's error code and low watermark.
func wantDeleted(code int16, low int64) check[*kmsg.DeleteRecordsResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.DeleteRecordsResponse) {
		t.Helper()
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("answer %+v, want one partition", resp)
		}
		if sp := resp.Topics[0].Partitions[0]; sp.ErrorCode != code || sp.LowWatermark != low {
			t.Errorf("error %d, low watermark %d; want %d, %d", sp.ErrorCode, sp.LowWatermark, code, low)
		}
	}
}

// wantLogStart checks the log start offset of broker 1's partition.
func wantLogStart(topic string, idx int32, start int64) check[*kmsg.DeleteRecordsResponse] {
	return func(t *testing.T, s *scene, _ *kmsg.DeleteRecordsResponse) {
		t.Helper()
		if got := s.part(t, topic, idx).LogStartOffset(); got != start {
			t.Errorf("log start of %s-%d: %d, want %d", topic, idx, got, start)
		}
	}
}
