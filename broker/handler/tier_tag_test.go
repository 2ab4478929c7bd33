package handler

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReplicaTiersTag: a dir's tag round-trips, one state per partition
// in the dir's order; a truncated or overlong one is an error rather
// than a wrong figure.
func TestReplicaTiersTag(t *testing.T) {
	in := []ReplicaTier{
		{Leader: true, Tiered: true, LocalStart: 7, RemoteStart: 0, RemoteEnd: 6, RemoteBytes: 1 << 40, CopyLagSegments: 2, CopyLagBytes: 300, LastError: "put: ünïcode"},
		{RemoteStart: -1, RemoteEnd: -1},
		{Tiered: true, LocalStart: 1 << 50, RemoteStart: 3, RemoteEnd: 1<<50 - 1, RemoteBytes: 9},
	}
	var raw []byte
	for _, rt := range in {
		raw = rt.AppendTo(raw)
	}
	dir := kmsg.NewDescribeLogDirsResponseDir()
	for _, n := range []int32{2, 1} {
		dt := kmsg.NewDescribeLogDirsResponseDirTopic()
		for p := range n {
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition = p
			dt.Partitions = append(dt.Partitions, dp)
		}
		dir.Topics = append(dir.Topics, dt)
	}
	if _, ok, _ := ParseReplicaTiers(&dir); ok {
		t.Fatal("a tag found in no tags")
	}
	dir.UnknownTags.Set(TierTag, raw)
	out, ok, err := ParseReplicaTiers(&dir)
	if !ok || err != nil || len(out) != len(in) {
		t.Fatalf("round trip: %+v %v %v", out, ok, err)
	}
	for i := range in {
		if out[i] != in[i] {
			t.Errorf("partition %d: %+v, want %+v", i, out[i], in[i])
		}
	}
	for _, bad := range [][]byte{raw[:len(raw)-1], raw[:1], append(append([]byte{}, raw...), 0)} {
		var d kmsg.DescribeLogDirsResponseDir
		d.Topics = dir.Topics
		d.UnknownTags.Set(TierTag, bad)
		if _, ok, err := ParseReplicaTiers(&d); !ok || err == nil {
			t.Errorf("%d of %d bytes parsed: %v %v", len(bad), len(raw), ok, err)
		}
	}
}
