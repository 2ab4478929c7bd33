package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// TestStopAnswersRequestsInFlight stops a broker while a Fetch long poll
// (30 s max wait) is the first request on its connection: the broker
// answers it, empty, before closing, instead of dropping the connection.
// franz-go reads a close before a connection's first answer as a SASL
// mismatch and does not retry (this is how an InitProducerID in flight
// during a controlled shutdown once failed a producer).
func TestStopAnswersRequestsInFlight(t *testing.T) {
	b, metrics := startMetered(t)
	id := harness.CreateTopic(t, b.Admin(), "drain", 1, nil)
	cl := b.Client()

	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 30_000
	req.MinBytes = 1
	req.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "drain", id
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)

	type answer struct {
		resp kmsg.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := cl.Broker(1).Request(testCtx(t), req)
		answered <- answer{resp, err}
	}()
	waitUntil(t, "the fetch waiting in the broker", 30*time.Second, func() bool {
		return metricValue(t, metrics, `strata_requests_in_flight{api="Fetch"}`) == 1
	})
	b.Stop()
	a := <-answered
	if a.err != nil {
		t.Fatalf("fetch in flight at stop: %v, want an answer", a.err)
	}
	resp := a.resp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("fetch answered %v", err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil || len(rp.RecordBatches) != 0 {
				t.Fatalf("partition %d: err %v, %d record bytes; want an empty answer", rp.Partition, err, len(rp.RecordBatches))
			}
		}
	}
}
