package hostile

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// recordCases attack the record and topic checks. Every refused batch
// must leave its partition's log as it was.
var recordCases = []hostileCase{
	{name: "bad_crc_and_old_magic", run: badBatches},
	{name: "compression_bombs", memory: true, run: compressionBombs},
	{name: "invalid_topic_names", run: invalidTopicNames},
	{name: "internal_topic", run: internalTopic},
	{name: "impossible_create_topics", run: impossibleCreateTopics},
}

// badTopic takes the refused batches of the record cases.
const badTopic = "hostile-bad"

// badTopicID creates badTopic (if it does not exist yet) and returns its ID.
func badTopicID(t *testing.T, g *target) kadm.TopicID {
	t.Helper()
	adm := harness.NewAdmin(t, g.p.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	if td, err := adm.ListTopics(ctx, badTopic); err == nil && td.Has(badTopic) {
		return td[badTopic].ID
	}
	return harness.CreateTopic(t, adm, badTopic, 1, map[string]string{"max.message.bytes": "131072"})
}

// produceRequest is a Produce request of version v (acks=all) carrying
// records for partition 0 of topic.
func produceRequest(v int16, topic string, id kadm.TopicID, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = v, -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// legacyMessage is a one-message v0 or v1 message set (a correct CRC-32)
// with a value of n bytes.
func legacyMessage(magic byte, n int) []byte {
	m := []byte{0, 0, 0, 0, magic, 0} // CRC, magic, attributes
	if magic == 1 {
		m = binary.BigEndian.AppendUint64(m, uint64(time.Now().UnixMilli()))
	}
	m = binary.BigEndian.AppendUint32(m, ^uint32(0)) // null key
	m = binary.BigEndian.AppendUint32(m, uint32(n))
	m = append(m, strings.Repeat("v", n)...)
	binary.BigEndian.PutUint32(m, crc32.ChecksumIEEE(m[4:]))
	out := binary.BigEndian.AppendUint64(nil, 0)
	out = binary.BigEndian.AppendUint32(out, uint32(len(m)))
	return append(out, m...)
}

// expectRefused sends records in a Produce request of version v to
// badTopic on a fresh connection and fails unless the answer is want and
// the log's end is unchanged. want -1 means the broker must refuse the
// request version by closing the connection or answering
// UNSUPPORTED_VERSION.
func expectRefused(t *testing.T, g *target, id kadm.TopicID, name string, v int16, records []byte, want int16) {
	t.Helper()
	end := endOffset(t, g)
	c := dialFrom(t, "", g.p.Addr())
	resp, err := request(c, produceRequest(v, badTopic, id, records))
	c.Close()
	switch {
	case want == -1 && err != nil:
		t.Logf("%s (produce v%d): connection closed (%v)", name, v, err)
	case err != nil:
		t.Errorf("%s (produce v%d): %v", name, v, err)
	default:
		pr := resp.(*kmsg.ProduceResponse)
		code := int16(-2)
		if len(pr.Topics) == 1 && len(pr.Topics[0].Partitions) == 1 {
			code = pr.Topics[0].Partitions[0].ErrorCode
		}
		if want == -1 {
			want = kerr.UnsupportedVersion.Code
		}
		if code != want {
			t.Errorf("%s (produce v%d): error %v, want %v", name, v, kerr.ErrorForCode(code), kerr.ErrorForCode(want))
		}
	}
	if got := endOffset(t, g); got != end {
		t.Errorf("%s: end offset of %s went from %d to %d", name, badTopic, end, got)
	}
}

// endOffset is badTopic's high watermark.
func endOffset(t *testing.T, g *target) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	ends, err := harness.NewAdmin(t, g.p.Addr()).ListEndOffsets(ctx, badTopic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("end offset of %s: %v", badTopic, err)
	}
	o, _ := ends.Lookup(badTopic, 0)
	return o.Offset
}

// goodBatch is a valid v2 batch of n small records.
func goodBatch(n int) []byte {
	recs := make([]harness.RawRecord, n)
	for i := range recs {
		recs[i] = harness.RawRecord{Key: []byte("k"), Value: []byte("good")}
	}
	return harness.BuildBatch(harness.BatchSpec{ProducerID: -1, FirstTs: time.Now().UnixMilli(), Records: recs})
}

// badBatches sends batches with bad CRCs, v0/v1 message sets (shorter
// and longer than a v2 header), truncated batches and unknown magics,
// through Produce v3 and the current version, and the same message sets
// through Produce v2, which Strata, like Kafka 4, does not serve.
func badBatches(t *testing.T, g *target) {
	id := badTopicID(t, g)
	good := goodBatch(2)
	badCRC := append([]byte(nil), good...)
	badCRC[len(badCRC)-3] ^= 0x40
	magic3 := append([]byte(nil), good...)
	magic3[16] = 3
	badLegacyCRC := legacyMessage(1, 1)
	badLegacyCRC[len(badLegacyCRC)-1] ^= 1
	cases := []struct {
		name    string
		records []byte
		want    int16
	}{
		{"bad CRC", badCRC, kerr.CorruptMessage.Code},
		{"magic 3", magic3, kerr.CorruptMessage.Code},
		{"truncated batch", good[:len(good)-5], kerr.InvalidRecord.Code},
		{"magic 0, 1-byte value", legacyMessage(0, 1), kerr.InvalidRecord.Code},
		{"magic 1, empty value", legacyMessage(1, 0), kerr.InvalidRecord.Code},
		{"magic 1, 100-byte value", legacyMessage(1, 100), kerr.InvalidRecord.Code},
		{"magic 1, bad CRC", badLegacyCRC, kerr.InvalidRecord.Code},
		{"magic 0, truncated", legacyMessage(0, 10)[:20], kerr.InvalidRecord.Code},
		{"length below a v0 message", binary.BigEndian.AppendUint32(make([]byte, 8), 13), kerr.CorruptMessage.Code},
		{"no batch", nil, kerr.InvalidRecord.Code},
	}
	for _, v := range []int16{3, 9, 13} {
		for _, c := range cases {
			expectRefused(t, g, id, c.name, v, c.records, c.want)
		}
	}
	for _, c := range cases[3:6] {
		expectRefused(t, g, id, c.name, 2, c.records, -1)
	}
	end := endOffset(t, g)
	if pr := harness.ProduceRaw(t, harness.NewClient(t, g.p.Addr()), badTopic, id, 0, good); pr.ErrorCode != 0 || pr.BaseOffset != end {
		t.Fatalf("a good batch after the bad ones: %v at %d, want offset %d", kerr.ErrorForCode(pr.ErrorCode), pr.BaseOffset, end)
	}
}

// compressionBombs sends gzip and zstd batches whose records inflate far
// past max.message.bytes (MESSAGE_TOO_LARGE, decompression stopped at a
// bound), random bytes posing as compressed records (CORRUPT_MESSAGE) and
// a batch claiming 1000 records that holds 1 (INVALID_RECORD).
func compressionBombs(t *testing.T, g *target) {
	id := badTopicID(t, g)
	noise := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(3, 5))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	now := time.Now().UnixMilli()
	for codec, name := range map[int8]string{1: "gzip", 4: "zstd"} {
		// 64 MiB of zeros: 512 times the topic's max.message.bytes.
		bomb := harness.BuildBatch(harness.BatchSpec{ProducerID: -1, FirstTs: now, Codec: codec,
			Records: []harness.RawRecord{{Key: []byte("k"), Value: make([]byte, 64<<20)}}})
		if len(bomb) >= 131072 {
			t.Fatalf("%s bomb is %d bytes as sent, not under max.message.bytes", name, len(bomb))
		}
		expectRefused(t, g, id, name+" bomb", 9, bomb, kerr.MessageTooLarge.Code)
		random := harness.BuildBatch(harness.BatchSpec{ProducerID: -1, FirstTs: now, Codec: codec, Area: noise,
			Records: []harness.RawRecord{{Value: []byte("x")}}})
		expectRefused(t, g, id, name+" random bytes", 9, random, kerr.CorruptMessage.Code)
		liar := harness.BuildBatch(harness.BatchSpec{ProducerID: -1, FirstTs: now, Codec: codec, Count: 1000,
			Records: []harness.RawRecord{{Value: []byte("one")}}})
		expectRefused(t, g, id, name+" claims 1000 records, holds 1", 9, liar, kerr.InvalidRecord.Code)
	}
	liar := harness.BuildBatch(harness.BatchSpec{ProducerID: -1, FirstTs: now, Count: 1000, Records: []harness.RawRecord{{Value: []byte("one")}}})
	expectRefused(t, g, id, "uncompressed, claims 1000 records, holds 1", 9, liar, kerr.InvalidRecord.Code)
}

// invalidTopicNames creates, asks metadata for and produces to topics
// whose names Kafka refuses: INVALID_TOPIC_EXCEPTION, nothing created.
func invalidTopicNames(t *testing.T, g *target) {
	adm := harness.NewAdmin(t, g.p.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	names := []string{"bad/name", ".", "..", "has space", "ünïcode", strings.Repeat("x", 250), "tab\there", "semi;colon"}
	for _, name := range names {
		r, err := adm.CreateTopic(ctx, 1, 1, nil, name)
		if err == nil {
			err = r.Err
		}
		if !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("create %.20q: %v, want INVALID_TOPIC_EXCEPTION", name, err)
		}
	}
	c := dialFrom(t, "", g.p.Addr())
	md := kmsg.NewPtrMetadataRequest()
	md.Version, md.AllowAutoTopicCreation = 12, true
	for _, name := range names {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		md.Topics = append(md.Topics, rt)
	}
	resp, err := request(c, md)
	if err != nil {
		t.Fatalf("metadata naming invalid topics: %v", err)
	}
	for _, mt := range resp.(*kmsg.MetadataResponse).Topics {
		if mt.ErrorCode != kerr.InvalidTopicException.Code {
			t.Errorf("metadata (auto-create) of %.20q: %v, want INVALID_TOPIC_EXCEPTION", *mt.Topic, kerr.ErrorForCode(mt.ErrorCode))
		}
	}
	resp, err = request(c, produceRequest(9, "bad/name", kadm.TopicID{}, goodBatch(1)))
	if err != nil {
		t.Fatalf("produce to an invalid topic name: %v", err)
	}
	code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	if code != kerr.UnknownTopicOrPartition.Code && code != kerr.InvalidTopicException.Code {
		t.Errorf("produce to %q: %v, want UNKNOWN_TOPIC_OR_PARTITION or INVALID_TOPIC_EXCEPTION", "bad/name", kerr.ErrorForCode(code))
	}
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if listed.Has(name) {
			t.Errorf("topic %.20q exists", name)
		}
	}
}

// internalTopic produces to __consumer_offsets (INVALID_TOPIC_EXCEPTION)
// and tries to create it (refused).
func internalTopic(t *testing.T, g *target) {
	const name = "__consumer_offsets"
	adm := harness.NewAdmin(t, g.p.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	// A group commit makes sure the topic exists.
	if _, err := adm.CommitOffsets(ctx, "hostile-group", kadm.OffsetsFromRecords()); err != nil {
		t.Logf("commit to create %s: %v", name, err)
	}
	r, err := adm.CreateTopic(ctx, 1, 1, nil, name)
	if err == nil {
		err = r.Err
	}
	if err == nil {
		t.Fatalf("create %s: accepted", name)
	}
	t.Logf("create %s: %v %s", name, err, r.ErrMessage)
	c := dialFrom(t, "", g.p.Addr())
	resp, err := request(c, produceRequest(9, name, kadm.TopicID{}, goodBatch(1)))
	if err != nil {
		t.Fatalf("produce to %s: %v", name, err)
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidTopicException.Code && code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("produce to %s: %v, want INVALID_TOPIC_EXCEPTION", name, kerr.ErrorForCode(code))
	}
}

// impossibleCreateTopics asks for replication factors of 0 and below,
// partition counts of 0, -5 and 100,000, each with its error code and
// nothing created.
func impossibleCreateTopics(t *testing.T, g *target) {
	adm := harness.NewAdmin(t, g.p.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	cases := []struct {
		name       string
		partitions int32
		rf         int16
		want       []error
	}{
		{"hostile-rf-0", 1, 0, []error{kerr.InvalidReplicationFactor}},
		{"hostile-rf-minus-2", 1, -2, []error{kerr.InvalidReplicationFactor}},
		{"hostile-rf-3", 1, 3, []error{kerr.InvalidReplicationFactor}},
		{"hostile-partitions-0", 0, 1, []error{kerr.InvalidPartitions}},
		{"hostile-partitions-minus-5", -5, 1, []error{kerr.InvalidPartitions}},
		// Over the partition budget the open-file limit leaves (or, with
		// a limit high enough, over Kafka's batch bound).
		{"hostile-partitions-100000", 100_000, 1, []error{kerr.PolicyViolation, kerr.InvalidPartitions, kerr.ThrottlingQuotaExceeded}},
	}
	for _, c := range cases {
		r, err := adm.CreateTopic(ctx, c.partitions, c.rf, nil, c.name)
		if err == nil {
			err = r.Err
		}
		ok := false
		for _, w := range c.want {
			ok = ok || errors.Is(err, w)
		}
		if !ok {
			t.Errorf("create %s (%d partitions, rf %d): %v %s, want one of %v", c.name, c.partitions, c.rf, err, r.ErrMessage, c.want)
		} else {
			t.Logf("create %s: %v %s", c.name, err, r.ErrMessage)
		}
	}
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if listed.Has(c.name) {
			t.Errorf("topic %s exists", c.name)
		}
	}
}
