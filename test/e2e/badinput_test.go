package e2e

import (
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// expectClosed writes frame on a fresh connection and fails unless the
// broker closes the connection within 10 s.
func expectClosed(t *testing.T, addr string, frame []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	if _, err := conn.Write(frame); err != nil {
		return // already closed while we wrote
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.Copy(io.Discard, conn) // returns nil on EOF
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection still open 10s after sending %d bytes %x…", len(frame), frame[:min(len(frame), 16)])
	}
}

func frame(size int32, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(size)), body...)
}

// TestBadFramesCloseConnection sends frames the broker must refuse by
// closing the connection (over socket.request.max.bytes, negative size,
// truncated header, unknown API key) and checks that a second client is
// still served afterwards.
func TestBadFramesCloseConnection(t *testing.T) {
	b := harness.Start(t, map[string]string{"socket.request.max.bytes": "1048576"})
	apiVersionsHeader := []byte{0, 18, 0, 3, 0, 0, 0, 1, 0, 1, 'x'}
	cases := []struct {
		name  string
		frame []byte
	}{
		{"larger than socket.request.max.bytes", frame(100<<20, apiVersionsHeader)},
		{"negative size", frame(-5, nil)},
		{"truncated header", frame(4, []byte{0, 18, 0, 3})},
		{"unknown api key", frame(23, append([]byte{0x30, 0x39, 0, 0, 0, 0, 0, 1, 0, 1, 'x'}, []byte("garbage-body")...))},
		{"garbage", frame(32, []byte(strings.Repeat("\xff\xfe\x00\x80", 8)))},
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			expectClosed(t, b.Addr(), c.frame)
			// Another client on a new connection must still be served.
			ctx := testCtx(t)
			if err := harness.Ping(ctx, b.Addr()); err != nil {
				t.Fatalf("broker stopped serving after a bad frame: %v", err)
			}
		})
	}
	produceSync(t, b.Client(kgo.AllowAutoTopicCreation()), &kgo.Record{Topic: "after-bad-frames", Value: []byte("still fine")})
}

// TestCorruptBatchRejected flips a byte of a batch after its CRC was
// computed: the broker answers CORRUPT_MESSAGE and appends nothing.
func TestCorruptBatchRejected(t *testing.T) {
	b := harness.Start(t, nil)
	adm := b.Admin()
	const topic = "corrupt"
	id := harness.CreateTopic(t, adm, topic, 1, nil)
	cl := b.Client()
	good := harness.BuildBatch(harness.BatchSpec{ProducerID: -1, FirstTs: time.Now().UnixMilli(), Records: []harness.RawRecord{{Value: []byte("payload-0")}, {Value: []byte("payload-1")}}})
	bad := append([]byte(nil), good...)
	bad[len(bad)-3] ^= 0x40 // inside the last record's value
	if pr := harness.ProduceRaw(t, cl, topic, id, 0, bad); pr.ErrorCode != kerr.CorruptMessage.Code {
		t.Errorf("batch with bad CRC: error %v, want CORRUPT_MESSAGE", kerr.ErrorForCode(pr.ErrorCode))
	}
	if end := endOffset(t, adm, topic, 0); end != 0 {
		t.Fatalf("end offset %d after a rejected batch, want 0", end)
	}
	if pr := harness.ProduceRaw(t, cl, topic, id, 0, good); pr.ErrorCode != 0 || pr.BaseOffset != 0 {
		t.Fatalf("good batch after the corrupt one: error %v base %d, want base 0", kerr.ErrorForCode(pr.ErrorCode), pr.BaseOffset)
	}
	if got := harness.ReadAll(t, b.Addr(), topic)[0]; len(got) != 2 || string(got[1].Value) != "payload-1" {
		t.Fatalf("log holds %d records, want the 2 good ones", len(got))
	}
}

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
