package handler

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

type offsetForLeaderEpochRow = apiRow[*kmsg.OffsetForLeaderEpochResponse]

func TestOffsetForLeaderEpoch(t *testing.T) {
	runRows(t, tableOpts{}, offsetForLeaderEpochRows())
}

func offsetForLeaderEpochRows() []offsetForLeaderEpochRow {
	// Epoch 0 holds offsets 0-1, epoch 1 offset 2, epoch 3 offsets 3-4 (no
	// leader had epoch 2); the log ends at 5.
	epochs := steps(withTopic("t", 1, nil), withRecords("t", 0, batch("a", "b")),
		bumpEpoch("t", 0), withRecords("t", 0, batch("c")),
		withState("t", 0, func(st *metadata.PartitionState) { st.LeaderEpoch += 2 }), withRecords("t", 0, batch("d", "e")))
	ask := func(epoch int32) func(*testing.T, *scene) kmsg.Request {
		return func(*testing.T, *scene) kmsg.Request { return offsetForLeaderEpochReq("t", 0, epoch) }
	}
	withCurrent := func(epoch, current int32) func(*testing.T, *scene) kmsg.Request {
		return func(*testing.T, *scene) kmsg.Request {
			req := offsetForLeaderEpochReq("t", 0, epoch)
			req.Topics[0].Partitions[0].CurrentLeaderEpoch = current
			return req
		}
	}
	return []offsetForLeaderEpochRow{
		{name: "the latest epoch ends at the log end", setup: epochs, req: ask(3), want: wantEpochEnd(0, 3, 5)},
		{name: "an older epoch ends where the next starts", setup: epochs, req: ask(0), want: wantEpochEnd(0, 0, 2)},
		{name: "the epoch before the latest", setup: epochs, req: ask(1), want: wantEpochEnd(0, 1, 3)},
		{name: "an epoch no leader had is the one before it", setup: epochs, req: ask(2), want: wantEpochEnd(0, 1, 3)},
		{name: "an epoch past the latest is unknown", setup: epochs, req: ask(4), want: wantEpochEnd(0, -1, -1)},
		{name: "epoch -1 is unknown", setup: epochs, req: ask(-1), want: wantEpochEnd(0, -1, -1)},
		{
			name: "an epoch that wrote nothing is replaced by the next",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, batch("a", "b")),
				bumpEpoch("t", 0), bumpEpoch("t", 0), withRecords("t", 0, batch("c"))),
			req:  ask(1),
			want: wantEpochEnd(0, 0, 2),
		},
		{
			// Kafka's LeaderEpochFileCache.endOffsetFor: the asked epoch, ending
			// where the first known one starts.
			name:  "an epoch before the first ends where the first starts",
			setup: steps(withTopic("t", 1, nil), bumpEpoch("t", 0), withRecords("t", 0, batch("a"))),
			req:   ask(0),
			want:  wantEpochEnd(0, 0, 0),
		},
		{name: "an empty log", setup: withTopic("t", 1, nil), req: ask(0), want: wantEpochEnd(0, 0, 0)},
		{
			// KIP-320, from v2; older versions do not carry it.
			name:     "current leader epoch older than ours",
			versions: []int16{0, 1, 2, 4},
			setup:    epochs,
			req:      withCurrent(0, 2),
			want: func(t *testing.T, s *scene, resp *kmsg.OffsetForLeaderEpochResponse) {
				if s.version >= 2 {
					wantEpochEnd(kerr.FencedLeaderEpoch.Code, -1, -1)(t, s, resp)
				} else {
					wantEpochEnd(0, 0, 2)(t, s, resp)
				}
			},
		},
		{
			name:     "current leader epoch newer than ours",
			versions: []int16{2, 4},
			setup:    epochs,
			req:      withCurrent(0, 4),
			want:     wantEpochEnd(kerr.UnknownLeaderEpoch.Code, -1, -1),
		},
		{name: "current leader epoch ours", versions: []int16{2, 4}, setup: epochs, req: withCurrent(0, 3), want: wantEpochEnd(0, 0, 2)},
		{
			// Followers find where their log diverges (v3+ name the replica).
			name:     "a follower asks",
			versions: []int16{3, 4},
			setup:    steps(rf2(nil), withRecords("t", 0, batch("a", "b"))),
			req: func(*testing.T, *scene) kmsg.Request {
				req := offsetForLeaderEpochReq("t", 0, 0)
				req.ReplicaID = 2
				return req
			},
			want: wantEpochEnd(0, 0, 2),
		},
		{name: "unknown topic", req: ask(0), want: wantEpochEnd(kerr.UnknownTopicOrPartition.Code, -1, -1)},
		{
			name:  "unknown partition",
			setup: withTopic("t", 1, nil),
			req: func(*testing.T, *scene) kmsg.Request {
				return offsetForLeaderEpochReq("t", 1, 0)
			},
			want: wantEpochEnd(kerr.UnknownTopicOrPartition.Code, -1, -1),
		},
		{
			name:  "follower",
			setup: steps(withPeer(2, nil), withAssignedTopic("t", map[int32][]int32{0: {2, 1}}, nil)),
			req:   ask(0),
			want:  wantEpochEnd(kerr.NotLeaderForPartition.Code, -1, -1),
		},
	}
}

func offsetForLeaderEpochReq(topic string, idx, epoch int32) *kmsg.OffsetForLeaderEpochRequest {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = idx, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// wantEpochEnd checks the one partition's error code, epoch (v1+) and end
// offset.
func wantEpochEnd(code int16, epoch int32, end int64) check[*kmsg.OffsetForLeaderEpochResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.OffsetForLeaderEpochResponse) {
		t.Helper()
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("answer %+v, want one partition", resp)
		}
		sp := resp.Topics[0].Partitions[0]
		epochOK := s.version < 1 || sp.LeaderEpoch == epoch
		if sp.ErrorCode != code || !epochOK || sp.EndOffset != end {
			t.Errorf("error %d, epoch %d, end offset %d; want %d, %d, %d", sp.ErrorCode, sp.LeaderEpoch, sp.EndOffset, code, epoch, end)
		}
	}
}
