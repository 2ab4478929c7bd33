package harness

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// RawRecord is one record for BuildBatch; TsDelta is added to the batch's
// first timestamp.
type RawRecord struct {
	Key, Value []byte
	TsDelta    int64
}

// BatchSpec describes an uncompressed v2 record batch. ProducerID -1 means
// not idempotent.
type BatchSpec struct {
	ProducerID int64
	Epoch      int16
	Sequence   int32
	FirstTs    int64
	Records    []RawRecord
}

// BuildBatch encodes spec as a magic-2 record batch with a correct CRC-32C,
// the way a producer sends it (base offset 0).
func BuildBatch(spec BatchSpec) []byte {
	var recs []byte
	var maxDelta int64
	for i, r := range spec.Records {
		rec := kmsg.Record{TimestampDelta64: r.TsDelta, OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
		body := rec.AppendTo(nil)[1:] // drop the 1-byte varint of Length=0
		rec.Length = int32(len(body))
		recs = rec.AppendTo(recs)
		maxDelta = max(maxDelta, r.TsDelta)
	}
	seq, epoch := spec.Sequence, spec.Epoch
	if spec.ProducerID < 0 {
		seq, epoch = -1, -1
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(spec.Records) - 1),
		FirstTimestamp:       spec.FirstTs,
		MaxTimestamp:         spec.FirstTs + maxDelta,
		ProducerID:           spec.ProducerID,
		ProducerEpoch:        epoch,
		FirstSequence:        seq,
		NumRecords:           int32(len(spec.Records)),
		Records:              recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:12], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
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
