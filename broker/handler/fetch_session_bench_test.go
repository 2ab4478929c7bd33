package handler

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/fetchsession"
)

// BenchmarkIncrementalFetchQuiet is an incremental fetch of a session of
// 1,000 partitions none of which has anything new: the per-partition cost
// of a fetch attempt that reads nothing.
func BenchmarkIncrementalFetchQuiet(b *testing.B) {
	tb := newTestBroker(b, brokerOpts{})
	tb.env.Sessions = fetchsession.New(10, 1, fetchsession.EvictAfter)
	tb.createTopic(b, "t", 1000, nil)
	id, _ := tb.env.Cache.Topic("t")
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(13)
	req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "t", id.ID
	for p := range int32(1000) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = p, -1, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp := tb.do(b, req).(*kmsg.FetchResponse)
	if resp.SessionID == 0 {
		b.Fatalf("no session: %v %+v", resp.ErrorCode, resp.Topics[0].Partitions[0])
	}
	inc := kmsg.NewPtrFetchRequest()
	inc.SetVersion(13)
	inc.ReplicaID, inc.MaxBytes, inc.SessionID = -1, 1<<20, resp.SessionID
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		inc.SessionEpoch = int32(i + 1)
		r := tb.do(b, inc).(*kmsg.FetchResponse)
		if r.ErrorCode != 0 || len(r.Topics) != 0 {
			b.Fatalf("answer: %+v", r)
		}
	}
}
