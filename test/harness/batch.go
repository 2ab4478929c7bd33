package harness

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RawRecord is one record for BuildBatch; TsDelta is added to the batch's
// first timestamp.
type RawRecord struct {
	Key, Value []byte
	TsDelta    int64
}

// BatchSpec describes a v2 record batch. ProducerID -1 means not
// idempotent. The other fields default to what a producer sends; tests of
// malformed batches set them.
type BatchSpec struct {
	ProducerID int64
	Epoch      int16
	Sequence   int32
	FirstTs    int64
	Records    []RawRecord
	// Codec compresses the records with franz-go's compressor (kgo's
	// codec numbers: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).
	Codec int8
	// Area, when set, is stored as the (compressed) records area instead
	// of the encoded Records.
	Area []byte
	// Count, when set, is the stored record count, with a last offset
	// delta of Count-1; default len(Records).
	Count int32
	// Deltas, when set, are the records' offset deltas; default 0..n-1.
	Deltas []int32
}

// BuildBatch encodes spec as a magic-2 record batch with a correct CRC-32C,
// the way a producer sends it (base offset 0).
func BuildBatch(spec BatchSpec) []byte {
	var recs []byte
	var maxDelta int64
	for i, r := range spec.Records {
		delta := int32(i)
		if spec.Deltas != nil {
			delta = spec.Deltas[i]
		}
		rec := kmsg.Record{TimestampDelta64: r.TsDelta, OffsetDelta: delta, Key: r.Key, Value: r.Value}
		body := rec.AppendTo(nil)[1:] // drop the 1-byte varint of Length=0
		rec.Length = int32(len(body))
		recs = rec.AppendTo(recs)
		maxDelta = max(maxDelta, r.TsDelta)
	}
	if spec.Codec != 0 {
		recs = Compress(spec.Codec, recs)
	}
	if spec.Area != nil {
		recs = spec.Area
	}
	count := spec.Count
	if count == 0 {
		count = int32(len(spec.Records))
	}
	seq, epoch := spec.Sequence, spec.Epoch
	if spec.ProducerID < 0 {
		seq, epoch = -1, -1
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(spec.Codec),
		LastOffsetDelta:      count - 1,
		FirstTimestamp:       spec.FirstTs,
		MaxTimestamp:         spec.FirstTs + maxDelta,
		ProducerID:           spec.ProducerID,
		ProducerEpoch:        epoch,
		FirstSequence:        seq,
		NumRecords:           count,
		Records:              recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:12], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// Compress compresses data with franz-go's compressor for codec (as in
// BatchSpec.Codec), for records areas built by hand.
func Compress(codec int8, data []byte) []byte {
	codecs := map[int8]kgo.CompressionCodec{1: kgo.GzipCompression(), 2: kgo.SnappyCompression(), 3: kgo.Lz4Compression(), 4: kgo.ZstdCompression()}
	c, err := kgo.DefaultCompressor(codecs[codec])
	if err != nil || c == nil {
		panic(fmt.Sprintf("harness: compressor for codec %d: %v", codec, err))
	}
	out, used := c.Compress(new(bytes.Buffer), data)
	if int8(used) != codec {
		panic(fmt.Sprintf("harness: codec %d compressed as %d", codec, used))
	}
	return bytes.Clone(out)
}

// ProduceRaw sends one Produce request (acks=all, 10 s timeout) carrying
// batch for topic/partition through r (a client, or one of its brokers
// to aim at a leader) and returns that partition's response.
func ProduceRaw(t testing.TB, r kmsg.Requestor, topic string, id kadm.TopicID, p int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), OpTimeout)
	defer cancel()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		t.Fatalf("produce to %s/%d: %v", topic, p, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce to %s/%d: response has %d topics, want 1 with 1 partition: %+v", topic, p, len(resp.Topics), resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}
