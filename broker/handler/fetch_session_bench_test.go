package handler

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/fetchsession"
)

// BenchmarkFetchQuiet is a consumer's fetch of 1,000 partitions none of
// which has anything new, answered at once: incremental in a session,
// and sessionless (naming every partition) for comparison.
func BenchmarkFetchQuiet(b *testing.B) {
	tb := newTestBroker(b, brokerOpts{})
	tb.env.Sessions = fetchsession.New(10, 1, fetchsession.EvictAfter)
	tb.createTopic(b, "t", 1000, nil)
	id, _ := tb.env.Cache.Topic("t")
	full := kmsg.NewPtrFetchRequest()
	full.SetVersion(13)
	full.ReplicaID, full.MaxBytes, full.SessionEpoch = -1, 1<<20, fetchsession.FinalEpoch
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "t", id.ID
	for p := range int32(1000) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = p, -1, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	full.Topics = append(full.Topics, rt)
	b.Run("sessionless", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := tb.do(b, full).(*kmsg.FetchResponse); len(r.Topics) != 1 {
				b.Fatalf("answer: %+v", r)
			}
		}
	})
	b.Run("incremental", func(b *testing.B) {
		open := *full
		open.SessionEpoch = fetchsession.InitialEpoch
		resp := tb.do(b, &open).(*kmsg.FetchResponse)
		if resp.SessionID == 0 {
			b.Fatal("the full fetch opened no session")
		}
		inc := kmsg.NewPtrFetchRequest()
		inc.SetVersion(13)
		inc.ReplicaID, inc.MaxBytes, inc.SessionID, inc.SessionEpoch = -1, 1<<20, resp.SessionID, 1
		b.ReportAllocs()
		for b.Loop() {
			r := tb.do(b, inc).(*kmsg.FetchResponse)
			if r.ErrorCode != 0 || len(r.Topics) != 0 {
				b.Fatalf("answer: %+v", r)
			}
			inc.SessionEpoch = fetchsession.NextEpoch(inc.SessionEpoch)
		}
	})
}
