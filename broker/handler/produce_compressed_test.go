package handler

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/record"
)

// produceBatch sends batch to t/0 with acks=1 and returns the partition's
// response.
func produceBatch(t *testing.T, env *Env, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := produceRequest("")
	req.Topics[0].Partitions[0].Records = batch
	res, err := handleProduce(context.Background(), env, &Request{Body: req})
	if err != nil {
		t.Fatal(err)
	}
	return res.Resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// TestProduceChecksCompressedRecords: compressed batches whose records
// Kafka's LogValidator refuses get its codes, one inflating past
// max.message.bytes gets MESSAGE_TOO_LARGE, and none takes an offset.
func TestProduceChecksCompressedRecords(t *testing.T) {
	env := testEnv(t, nil, nil)
	st := metadata.PartitionState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}, LeaderEpoch: 1}
	setPartition(t, env, 1, metadata.NewTopicID(), map[string]string{"max.message.bytes": "65536"}, st)
	good := func() record.Batch {
		return record.NewBatch(record.BuildOptions{Codec: record.Zstd}, record.Record{Value: []byte("a")}, record.Record{Value: []byte("b")})
	}
	counted := func(n int32) record.Batch {
		b := good()
		binary.BigEndian.PutUint32(b[57:], uint32(n))   // record count
		binary.BigEndian.PutUint32(b[23:], uint32(n-1)) // last offset delta
		return withCRC(b)
	}
	garbage := good()
	for i := record.HeaderSize; i < len(garbage); i++ {
		garbage[i] = 0xAA
	}
	if sp := produceBatch(t, env, good()); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("good batch: %v at %d", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
	for _, c := range []struct {
		name  string
		batch record.Batch
		code  int16
	}{
		{"undecodable", withCRC(garbage), kerr.CorruptMessage.Code},
		{"count beyond the records", counted(1000), kerr.InvalidRecord.Code},
		{"records beyond the count", counted(1), kerr.InvalidRecord.Code},
		{"inflates past max.message.bytes", record.NewBatch(record.BuildOptions{Codec: record.Zstd}, record.Record{Value: make([]byte, 1<<20)}), kerr.MessageTooLarge.Code},
	} {
		if sp := produceBatch(t, env, c.batch); sp.ErrorCode != c.code || sp.BaseOffset != -1 {
			t.Errorf("%s: %v at %d, want %v", c.name, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset, kerr.ErrorForCode(c.code))
		}
	}
	if sp := produceBatch(t, env, good()); sp.ErrorCode != 0 || sp.BaseOffset != 2 {
		t.Fatalf("good batch after the rejected ones: %v at %d, want offset 2", kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
	}
}
