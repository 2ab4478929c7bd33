package handler

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type listOffsetsRow = apiRow[*kmsg.ListOffsetsResponse]

func TestListOffsets(t *testing.T) {
	runRows(t, tableOpts{}, listOffsetsRows())
}

// withTimedRecords is a step producing to t-0 records whose timestamps are
// not in offset order: offset 0 at t0+1000, 1 and 2 at t0+3000 and
// t0+3001, 3 at t0+2000.
var withTimedRecords = withRecords("t", 0, batchAt(t0+1000, "a"), batchAt(t0+3000, "b", "c"), batchAt(t0+2000, "d"))

func listOffsetsRows() []listOffsetsRow {
	timed := steps(withTopic("t", 1, nil), withTimedRecords)
	// Records above the high watermark: t-0 is replicated to broker 2, which
	// has fetched none of them.
	unreplicated := steps(rf2(nil), withTimedRecords)
	at := func(timestamp int64) func(*testing.T, *scene) kmsg.Request {
		return func(*testing.T, *scene) kmsg.Request { return listOffsetsReq("t", 0, timestamp) }
	}
	// Timestamp lookups are v1+ (v0 had other semantics, gone from Kafka 4).
	lookups := []int16{1, 4, 9}
	return []listOffsetsRow{
		{
			name:  "latest is the high watermark",
			setup: timed,
			req:   at(latestTimestamp),
			want:  wantListed(0, 4, -1, 0),
		},
		{
			name:  "earliest is the log start",
			setup: timed,
			req:   at(earliestTimestamp),
			want:  wantListed(0, 0, -1, 0),
		},
		{
			name:  "earliest after records were deleted",
			setup: steps(timed, withDeletedBefore("t", 0, 2)),
			req:   at(earliestTimestamp),
			want:  wantListed(0, 2, -1, 0),
		},
		{
			name:     "max timestamp is the record with the largest one",
			versions: []int16{7, 9},
			setup:    timed,
			req:      at(maxTimestamp),
			want:     wantListed(0, 2, t0+3001, 0),
		},
		{
			name:     "max timestamp on an empty partition",
			versions: []int16{7, 9},
			setup:    withTopic("t", 1, nil),
			req:      at(maxTimestamp),
			want:     wantListed(0, -1, -1, -1),
		},
		{
			// Kafka looks only below the high watermark (the last fetchable
			// offset).
			name:     "max timestamp above the high watermark",
			versions: []int16{7, 9},
			setup:    unreplicated,
			req:      at(maxTimestamp),
			want:     wantListed(0, -1, -1, -1),
		},
		{
			name:     "earliest local is the local log start",
			versions: versionsFrom(kmsg.ListOffsets, 8),
			setup:    steps(timed, withDeletedBefore("t", 0, 1)),
			req:      at(earliestLocalTimestamp),
			want:     wantListed(0, 1, -1, 0),
		},
		{
			name:     "latest tiered with nothing tiered",
			versions: versionsFrom(kmsg.ListOffsets, 9),
			setup:    timed,
			req:      at(latestTieredTimestamp),
			want:     wantListed(0, -1, -1, -1),
		},
		{name: "by timestamp: the first record at or after it in offset order", versions: lookups, setup: timed, req: at(t0 + 1500), want: wantListed(0, 1, t0+3000, 0)},
		{name: "by timestamp: inside a batch", versions: lookups, setup: timed, req: at(t0 + 3001), want: wantListed(0, 2, t0+3001, 0)},
		{name: "by timestamp: before every record", versions: lookups, setup: timed, req: at(0), want: wantListed(0, 0, t0+1000, 0)},
		{name: "by timestamp: after every record", versions: lookups, setup: timed, req: at(t0 + 5000), want: wantListed(0, -1, -1, -1)},
		{name: "by timestamp above the high watermark", versions: lookups, setup: unreplicated, req: at(t0), want: wantListed(0, -1, -1, -1)},
		{
			name:  "read_uncommitted latest stops at the high watermark",
			setup: unreplicated,
			req:   at(latestTimestamp),
			want:  wantListed(0, 0, -1, 0),
		},
		{
			name:     "read_committed latest stops at the last stable offset (the high watermark)",
			versions: versionsFrom(kmsg.ListOffsets, 2),
			setup:    unreplicated,
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := listOffsetsReq("t", 0, latestTimestamp)
				req.IsolationLevel = 1
				return req
			},
			want: wantListed(0, 0, -1, 0),
		},
		{
			// KIP-207: until the high watermark reaches the epoch's start, the
			// new leader cannot tell where the log ends.
			name:     "a new leader whose high watermark lags its epoch start",
			versions: []int16{1, 9},
			setup:    steps(unreplicated, bumpEpoch("t", 0)),
			req:      at(latestTimestamp),
			want:     wantListed(kerr.OffsetNotAvailable.Code, -1, -1, -1),
		},
		{
			name:     "a lagging new leader finds no timestamp above the high watermark",
			versions: []int16{1, 9},
			setup:    steps(unreplicated, bumpEpoch("t", 0)),
			req:      at(t0),
			want:     wantListed(kerr.OffsetNotAvailable.Code, -1, -1, -1),
		},
		{
			name:     "a lagging new leader still answers earliest",
			versions: []int16{1, 9},
			setup:    steps(unreplicated, bumpEpoch("t", 0)),
			req:      at(earliestTimestamp),
			want:     wantListed(0, 0, -1, 0),
		},
		{
			name:     "earliest answers the epoch of the log start's batch",
			versions: []int16{4, 9},
			setup:    steps(timed, bumpEpoch("t", 0), withRecords("t", 0, batch("e"))),
			req:      at(earliestTimestamp),
			want:     wantListed(0, 0, -1, 0),
		},
		{
			name:     "earliest after records were deleted answers the epoch of the new start's batch",
			versions: []int16{4, 9},
			setup:    steps(timed, bumpEpoch("t", 0), withRecords("t", 0, batch("e")), withDeletedBefore("t", 0, 3)),
			req:      at(earliestTimestamp),
			want:     wantListed(0, 3, -1, 0),
		},
		{
			name:     "earliest local answers the epoch of its batch",
			versions: []int16{8, 9},
			setup:    steps(timed, bumpEpoch("t", 0), withRecords("t", 0, batch("e"))),
			req:      at(earliestLocalTimestamp),
			want:     wantListed(0, 0, -1, 0),
		},
		{
			name:     "by timestamp answers the epoch of the record's batch",
			versions: []int16{4, 9},
			setup:    steps(timed, bumpEpoch("t", 0), withRecords("t", 0, batchAt(t0+4000, "e"))),
			req:      at(t0 + 1500),
			want:     wantListed(0, 1, t0+3000, 0),
		},
		{
			name:     "latest answers the current leader epoch",
			versions: []int16{4, 9},
			setup:    steps(timed, bumpEpoch("t", 0)),
			req:      at(latestTimestamp),
			want:     wantListed(0, 4, -1, 1),
		},
		{
			name:     "unknown topic",
			versions: versionsFrom(kmsg.ListOffsets, 0),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return listOffsetsReq("nope", 0, latestTimestamp) },
			want:     wantListed(kerr.UnknownTopicOrPartition.Code, -1, -1, -1),
		},
		{
			name:  "unknown partition",
			setup: withTopic("t", 1, nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return listOffsetsReq("t", 1, latestTimestamp) },
			want:  wantListed(kerr.UnknownTopicOrPartition.Code, -1, -1, -1),
		},
		{
			name:  "follower",
			setup: steps(withPeer(2, nil), withAssignedTopic("t", map[int32][]int32{0: {2, 1}}, nil)),
			req:   at(latestTimestamp),
			want:  wantListed(kerr.NotLeaderForPartition.Code, -1, -1, -1),
		},
		{
			// KIP-320, from v4; older versions do not carry the epoch.
			name:     "current leader epoch older than ours",
			versions: []int16{0, 3, 4, 9},
			setup:    steps(timed, bumpEpoch("t", 0)),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := listOffsetsReq("t", 0, latestTimestamp)
				req.Topics[0].Partitions[0].CurrentLeaderEpoch = 0
				return req
			},
			want: func(t *testing.T, s *scene, resp *kmsg.ListOffsetsResponse) {
				if s.version >= 4 {
					wantListed(kerr.FencedLeaderEpoch.Code, -1, -1, -1)(t, s, resp)
				} else {
					wantListed(0, 4, -1, 1)(t, s, resp)
				}
			},
		},
		{
			name:     "current leader epoch newer than ours",
			versions: versionsFrom(kmsg.ListOffsets, 4),
			setup:    timed,
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := listOffsetsReq("t", 0, latestTimestamp)
				req.Topics[0].Partitions[0].CurrentLeaderEpoch = 1
				return req
			},
			want: wantListed(kerr.UnknownLeaderEpoch.Code, -1, -1, -1),
		},
	}
}

// listOffsetsReq is a consumer's ListOffsets of one partition at timestamp.
func listOffsetsReq(topic string, idx int32, timestamp int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = idx, timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// wantListed checks the one partition's answer: error code, offset and
// timestamp (v0: the offset alone, in OldStyleOffsets) and, from v4, the
// leader epoch.
func wantListed(code int16, offset, timestamp int64, epoch int32) check[*kmsg.ListOffsetsResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.ListOffsetsResponse) {
		t.Helper()
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("answer %+v, want one partition", resp)
		}
		sp := resp.Topics[0].Partitions[0]
		gotOffset, gotTimestamp, gotEpoch := sp.Offset, sp.Timestamp, sp.LeaderEpoch
		switch {
		case s.version == 0:
			gotOffset, gotTimestamp = -1, timestamp
			if len(sp.OldStyleOffsets) > 0 {
				gotOffset = sp.OldStyleOffsets[0]
			}
			if want := slices.DeleteFunc([]int64{offset}, func(o int64) bool { return o < 0 }); !slices.Equal(sp.OldStyleOffsets, want) {
				t.Errorf("old style offsets %v, want %v", sp.OldStyleOffsets, want)
			}
			fallthrough
		case s.version < 4:
			gotEpoch = epoch
		}
		if sp.ErrorCode != code || gotOffset != offset || gotTimestamp != timestamp || gotEpoch != epoch {
			t.Errorf("error %d, offset %d, timestamp %d, leader epoch %d; want %d, %d, %d, %d",
				sp.ErrorCode, gotOffset, gotTimestamp, gotEpoch, code, offset, timestamp, epoch)
		}
	}
}
