package handler

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type describeLogDirsRow = apiRow[*kmsg.DescribeLogDirsResponse]

func TestDescribeLogDirs(t *testing.T) {
	runRows(t, tableOpts{}, describeLogDirsRows())
}

func describeLogDirsRows() []describeLogDirsRow {
	// t-0 holds two batches, t-1 and u-0 none; w-0 is broker 2's alone, and
	// v-0 led by broker 2 and followed here.
	held := steps(withTopic("u", 1, nil), withTopic("t", 2, nil), withRecords("t", 0, batch("a"), batch("b", "c")),
		withPeer(2, nil), withAssignedTopic("w", map[int32][]int32{0: {2}}, nil), withAssignedTopic("v", map[int32][]int32{0: {2, 1}}, nil))
	written := int64(len(batch("a")) + len(batch("b", "c")))
	return []describeLogDirsRow{
		{
			name:  "every partition held here",
			setup: held,
			req:   func(*testing.T, *scene) kmsg.Request { return describeLogDirsReq(nil) },
			want: func(t *testing.T, s *scene, resp *kmsg.DescribeLogDirsResponse) {
				wantLogDirs(map[string][]int32{"t": {0, 1}, "u": {0}, "v": {0}},
					map[string]int64{"t-0": written, "t-1": 0, "u-0": 0, "v-0": 0})(t, s, resp)
				if resp.Dirs[0].UnknownTags.Len() != 0 {
					t.Error("tier tags, not asked for")
				}
			},
		},
		{
			name:  "the partitions asked for that are held here",
			setup: held,
			req: func(*testing.T, *scene) kmsg.Request {
				return describeLogDirsReq(map[string][]int32{"t": {1, 5}, "w": {0}, "nope": {0}, "v": {0}})
			},
			want: wantLogDirs(map[string][]int32{"t": {1}, "v": {0}}, map[string]int64{"t-1": 0, "v-0": 0}),
		},
		{
			name:  "Strata's tier tag asks for each partition's tier state",
			since: 2, // the first flexible version
			setup: held,
			req: func(*testing.T, *scene) kmsg.Request {
				req := describeLogDirsReq(map[string][]int32{"t": {0}, "v": {0}})
				req.UnknownTags.Set(TierTag, nil)
				return req
			},
			want: func(t *testing.T, s *scene, resp *kmsg.DescribeLogDirsResponse) {
				wantLogDirs(map[string][]int32{"t": {0}, "v": {0}}, map[string]int64{"t-0": written, "v-0": 0})(t, s, resp)
				tiers, ok, err := ParseReplicaTiers(&resp.Dirs[0])
				if !ok || err != nil || len(tiers) != 2 {
					t.Fatalf("tiers %+v %v %v, want t-0 and v-0's", tiers, ok, err)
				}
				// No tier here: nothing tiered, the local log starts at 0;
				// this broker leads t-0 and follows v-0.
				for i, topic := range []string{"t", "v"} {
					if want := (ReplicaTier{Leader: topic == "t", RemoteStart: -1, RemoteEnd: -1}); tiers[i] != want {
						t.Errorf("%s-0: tier %+v, want %+v", topic, tiers[i], want)
					}
				}
			},
		},
		{
			name:  "an empty list asks for none",
			setup: held,
			req: func(*testing.T, *scene) kmsg.Request {
				return describeLogDirsReq(map[string][]int32{})
			},
			want: wantLogDirs(nil, nil),
		},
	}
}

// describeLogDirsReq asks for partitions by topic (nil: all).
func describeLogDirsReq(topics map[string][]int32) *kmsg.DescribeLogDirsRequest {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	if topics != nil {
		req.Topics = []kmsg.DescribeLogDirsRequestTopic{}
	}
	for _, name := range slices.Sorted(maps.Keys(topics)) {
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = name, topics[name]
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// wantLogDirs checks the one log dir: its absolute path, from v4 its
// space, and its partitions (topics and partitions in order) with their
// sizes, no offset lag and none a future replica.
func wantLogDirs(parts map[string][]int32, sizes map[string]int64) check[*kmsg.DescribeLogDirsResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.DescribeLogDirsResponse) {
		t.Helper()
		if len(resp.Dirs) != 1 {
			t.Fatalf("%d dirs, want 1", len(resp.Dirs))
		}
		d := resp.Dirs[0]
		if want, _ := filepath.Abs(s.env.cfg().LogDirs[0]); d.ErrorCode != 0 || d.Dir != want {
			t.Errorf("dir %q error %d, want %q", d.Dir, d.ErrorCode, want)
		}
		if s.version >= 4 && (d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes) {
			t.Errorf("total bytes %d, usable %d", d.TotalBytes, d.UsableBytes)
		}
		got := map[string][]int32{}
		var order []string
		for _, dt := range d.Topics {
			order = append(order, dt.Topic)
			for _, dp := range dt.Partitions {
				got[dt.Topic] = append(got[dt.Topic], dp.Partition)
				name := fmt.Sprintf("%s-%d", dt.Topic, dp.Partition)
				if dp.Size != sizes[name] || dp.OffsetLag != 0 || dp.IsFuture {
					t.Errorf("%s: size %d, offset lag %d, future %v; want size %d", name, dp.Size, dp.OffsetLag, dp.IsFuture, sizes[name])
				}
			}
		}
		if !slices.IsSorted(order) || len(got) != len(parts) {
			t.Errorf("topics %v, want %v", got, parts)
		}
		for topic, ps := range parts {
			if !slices.Equal(got[topic], ps) {
				t.Errorf("%s: partitions %v, want %v", topic, got[topic], ps)
			}
		}
	}
}
