package e2e

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestMessageTooLarge checks MESSAGE_TOO_LARGE for a batch over the topic's
// max.message.bytes and over the broker's message.max.bytes, for raw
// requests and through kgo, with nothing appended.
func TestMessageTooLarge(t *testing.T) {
	b := harness.Start(t, map[string]string{"message.max.bytes": "4096"})
	adm := b.Admin()
	cl := b.Client()
	topicLimit := harness.CreateTopic(t, adm, "too-large-topic", 1, map[string]string{"max.message.bytes": "2048"})
	brokerLimit := harness.CreateTopic(t, adm, "too-large-broker", 1, nil)
	batchOf := func(n int) []byte {
		return harness.BuildBatch(harness.BatchSpec{ProducerID: -1, FirstTs: time.Now().UnixMilli(), Records: []harness.RawRecord{{Value: []byte(strings.Repeat("v", n))}}})
	}
	for _, c := range []struct {
		topic string
		id    [16]byte
		size  int
		code  int16
	}{
		{"too-large-topic", topicLimit, 3000, kerr.MessageTooLarge.Code},
		{"too-large-topic", topicLimit, 1000, 0},
		{"too-large-broker", brokerLimit, 6000, kerr.MessageTooLarge.Code},
		{"too-large-broker", brokerLimit, 3000, 0},
	} {
		pr := harness.ProduceRaw(t, cl, c.topic, c.id, 0, batchOf(c.size))
		if pr.ErrorCode != c.code {
			t.Errorf("%s: %d-byte value: error %v, want %v", c.topic, c.size, kerr.ErrorForCode(pr.ErrorCode), kerr.ErrorForCode(c.code))
		}
	}
	for _, topic := range []string{"too-large-topic", "too-large-broker"} {
		if end := endOffset(t, adm, topic, 0); end != 1 {
			t.Errorf("%s: end offset %d, want 1 (only the small batch)", topic, end)
		}
	}
	big := make([]byte, 3000) // incompressible: kgo compresses by default
	for i := range big {
		big[i] = byte(rand.Uint32())
	}
	err := b.Client().ProduceSync(testCtx(t), &kgo.Record{Topic: "too-large-topic", Value: big}).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("kgo produce of 3000 bytes to a 2048-byte topic: %v, want MESSAGE_TOO_LARGE", err)
	}
}

// TestProduceToMissingPartition checks UNKNOWN_TOPIC_OR_PARTITION for a
// partition the topic does not have.
func TestProduceToMissingPartition(t *testing.T) {
	b := harness.Start(t, nil)
	id := harness.CreateTopic(t, b.Admin(), "one-partition", 1, nil)
	batch := harness.BuildBatch(harness.BatchSpec{ProducerID: -1, FirstTs: time.Now().UnixMilli(), Records: []harness.RawRecord{{Value: []byte("nowhere")}}})
	if pr := harness.ProduceRaw(t, b.Client(), "one-partition", id, 5, batch); pr.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("produce to partition 5 of 1: error %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(pr.ErrorCode))
	}
}
