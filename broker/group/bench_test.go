package group

import "testing"

// BenchmarkCommitOffsets measures one simple OffsetCommit of four
// partitions on a real local log: building the batch, appending it and
// applying the offsets.
func BenchmarkCommitOffsets(b *testing.B) {
	e := newEnv(b, nil)
	req := CommitRequest{Group: "bench", Generation: -1}
	for p := range int32(4) {
		req.Offsets = append(req.Offsets, CommitOffset{TopicPartition: TopicPartition{Topic: "bench-commit", Partition: p}, Offset: Offset{LeaderEpoch: -1, ExpireTimestamp: -1}})
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for j := range req.Offsets {
			req.Offsets[j].Offset.Offset = int64(i)
			req.Offsets[j].CommitTimestamp = 0
		}
		for _, err := range e.c.CommitOffsets(req) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
