package e2e

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawRecord is one record for buildBatch; TsDelta is added to the batch's
// first timestamp.
type rawRecord struct {
	Key, Value []byte
	TsDelta    int64
}

// batchSpec describes an uncompressed v2 record batch. ProducerID -1 means
// not idempotent.
type batchSpec struct {
	ProducerID int64
	Epoch      int16
	Sequence   int32
	FirstTs    int64
	Records    []rawRecord
}

// buildBatch encodes spec as a magic-2 record batch with a correct CRC-32C,
// the way a producer sends it (base offset 0).
func buildBatch(spec batchSpec) []byte {
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

// produceRaw sends one Produce request (acks=all) carrying batch for
// topic/partition and returns that partition's response.
func produceRaw(t testing.TB, cl *kgo.Client, topic string, id kadm.TopicID, p int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("produce to %s/%d: %v", topic, p, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("produce to %s/%d: response has %d topics, want 1 with 1 partition: %+v", topic, p, len(resp.Topics), resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// TestBuildBatchDecodes guards the test's own batch builder: franz-go must
// read back what buildBatch writes, with a CRC it accepts.
func TestBuildBatchDecodes(t *testing.T) {
	raw := buildBatch(batchSpec{ProducerID: 7, Epoch: 1, Sequence: 5, FirstTs: 1000, Records: []rawRecord{
		{Key: []byte("k"), Value: []byte("v"), TsDelta: 0}, {Key: nil, Value: []byte("second"), TsDelta: 9},
	}})
	var b kmsg.RecordBatch
	if err := b.ReadFrom(raw); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if int(b.Length)+12 != len(raw) || b.NumRecords != 2 || b.MaxTimestamp != 1009 || b.FirstSequence != 5 {
		t.Fatalf("decoded header %+v", b)
	}
	if got := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)); uint32(b.CRC) != got {
		t.Fatalf("crc %x, computed %x", uint32(b.CRC), got)
	}
	recs := decodeRecords(t, b)
	if len(recs) != 2 || string(recs[1].Value) != "second" || recs[1].Key != nil || recs[1].OffsetDelta != 1 {
		t.Fatalf("records %+v", recs)
	}
}

// decodeRecords parses the records of an uncompressed batch.
func decodeRecords(t testing.TB, b kmsg.RecordBatch) []kmsg.Record {
	t.Helper()
	var out []kmsg.Record
	buf := b.Records
	for range b.NumRecords {
		n, used := binary.Varint(buf)
		if used <= 0 || int(n)+used > len(buf) {
			t.Fatalf("record length varint bad: %d/%d of %d bytes", n, used, len(buf))
		}
		var r kmsg.Record
		if err := r.ReadFrom(buf[:used+int(n)]); err != nil {
			t.Fatalf("decode record: %v", err)
		}
		out = append(out, r)
		buf = buf[used+int(n):]
	}
	return out
}
