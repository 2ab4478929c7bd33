package txn

import (
	"bytes"
	"errors"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/coordkey"
)

// golden is an Ongoing transaction, written out byte by byte from Kafka's
// TransactionLogKey v0 and TransactionLogValue v1 schemas.
var (
	goldenTxn = Txn{
		ProducerID: 1000, PrevProducerID: 999, NextProducerID: NoProducerID,
		ProducerEpoch: 6, LastProducerEpoch: NoProducerEpoch, TimeoutMs: 60000, State: Ongoing,
		Partitions: PartitionSet{{"b", 1}: {}, {"a", 2}: {}, {"a", 0}: {}},
		StartMs:    1_700_000_000_000, LastUpdateMs: 1_700_000_001_000, ClientVersion: TV2,
	}
	goldenKey = []byte{
		0x00, 0x00, // key version 0 (TRANSACTION_LOG)
		0x00, 0x04, 't', 'x', '-', '1', // TransactionalId: int16 length, bytes
	}
	goldenValue = []byte{
		0x00, 0x01, // value version 1 (flexible)
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8, // ProducerId 1000
		0x00, 0x06, // ProducerEpoch 6
		0x00, 0x00, 0xea, 0x60, // TransactionTimeoutMs 60000
		0x01,      // TransactionStatus Ongoing
		0x03,      // TransactionPartitions: compact array, 2 topics
		0x02, 'a', // Topic: compact string "a"
		0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, // PartitionIds [0, 2]
		0x00,      // no tagged fields
		0x02, 'b', // Topic "b"
		0x02, 0x00, 0x00, 0x00, 0x01, // PartitionIds [1]
		0x00,                                           // no tagged fields
		0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x6b, 0xe8, // TransactionLastUpdateTimestampMs
		0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, // TransactionStartTimestampMs
		0x02,                                                       // two tagged fields (NextProducerId -1 is the default, left out)
		0x00, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe7, // tag 0 PreviousProducerId 999
		0x02, 0x02, 0x00, 0x02, // tag 2 ClientTransactionVersion 2
	}
)

func TestRecordGolden(t *testing.T) {
	if got := EncodeKey("tx-1"); !bytes.Equal(got, goldenKey) {
		t.Errorf("key\n got % x\nwant % x", got, goldenKey)
	}
	got, err := EncodeValue(goldenTxn)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, goldenValue) {
		t.Errorf("value\n got % x\nwant % x", got, goldenValue)
	}
	id, m, err := DecodeRecord(goldenKey, goldenValue)
	if err != nil || id != "tx-1" {
		t.Fatalf("decode: %q %v", id, err)
	}
	if !sameTxn(m.Txn, goldenTxn) {
		t.Fatalf("decoded %+v\nwant %+v", m.Txn, goldenTxn)
	}
}

// sameTxn compares the logged fields (the last epoch is not logged).
func sameTxn(a, b Txn) bool {
	return a.ProducerID == b.ProducerID && a.PrevProducerID == b.PrevProducerID && a.NextProducerID == b.NextProducerID &&
		a.ProducerEpoch == b.ProducerEpoch && a.TimeoutMs == b.TimeoutMs && a.State == b.State &&
		a.StartMs == b.StartMs && a.LastUpdateMs == b.LastUpdateMs && a.ClientVersion == b.ClientVersion &&
		maps.Equal(a.Partitions, b.Partitions)
}

// TestRecordRoundTrip encodes a transaction in every logged state, reads
// it back with kmsg and with DecodeRecord.
func TestRecordRoundTrip(t *testing.T) {
	for _, s := range AllStates {
		tx := goldenTxn.clone()
		tx.State, tx.NextProducerID, tx.ClientVersion = s, 3000, TV1
		if s == Empty {
			tx.Partitions, tx.StartMs = PartitionSet{}, -1
		}
		b, err := EncodeValue(tx)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		var v kmsg.TxnMetadataValue
		if err := v.ReadFrom(b); err != nil {
			t.Fatalf("%s: kmsg read: %v", s, err)
		}
		if v.Version != 1 || v.State != s || v.ProducerID != 1000 || v.NextProducerID != 3000 || v.PreviousProducerID != 999 ||
			v.ClientTransactionVersion != 1 || v.NextProducerEpoch != -1 || (s == Empty) != (len(v.Topics) == 0) {
			t.Fatalf("%s: kmsg read %+v", s, v)
		}
		_, m, err := DecodeRecord(EncodeKey("x"), b)
		if err != nil || !sameTxn(m.Txn, tx) || m.LastProducerEpoch != NoProducerEpoch {
			t.Fatalf("%s: decoded %+v, %v", s, m, err)
		}
	}
}

// TestRecordV0 reads a value of version 0 (no tagged fields) written by
// kmsg, as older Kafka brokers wrote them.
func TestRecordV0(t *testing.T) {
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.ProducerEpoch, v.TimeoutMillis, v.State = 0, 42, 3, 1000, CompleteCommit
	v.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "t", Partitions: []int32{4}}}
	v.LastUpdateTimestamp, v.StartTimestamp = 20, 10
	_, m, err := DecodeRecord(EncodeKey("old"), v.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Txn{ProducerID: 42, PrevProducerID: NoProducerID, NextProducerID: NoProducerID, ProducerEpoch: 3,
		TimeoutMs: 1000, State: CompleteCommit, Partitions: PartitionSet{{"t", 4}: {}}, StartMs: 10, LastUpdateMs: 20}
	if !sameTxn(m.Txn, want) {
		t.Fatalf("decoded %+v", m.Txn)
	}
	// An Empty value's partitions are ignored, as Kafka ignores them.
	v.State = Empty
	if _, m, err = DecodeRecord(EncodeKey("old"), v.AppendTo(nil)); err != nil || len(m.Partitions) != 0 {
		t.Fatalf("empty: %v %v", m.Partitions, err)
	}
}

func TestTombstone(t *testing.T) {
	key, value := Tombstone("gone")
	if value != nil {
		t.Fatal("tombstone has a value")
	}
	id, m, err := DecodeRecord(key, value)
	if err != nil || id != "gone" || m != nil {
		t.Fatalf("decode tombstone: %q %v %v", id, m, err)
	}
}

func TestRecordErrors(t *testing.T) {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = 1, "x"
	if _, _, err := DecodeRecord(k.AppendTo(nil), nil); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("key version 1: %v", err)
	}
	bad := bytes.Clone(goldenValue)
	bad[1] = 2
	if _, _, err := DecodeRecord(goldenKey, bad); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("value version 2: %v", err)
	}
	bad = bytes.Clone(goldenValue)
	bad[16] = 9 // TransactionStatus
	if _, _, err := DecodeRecord(goldenKey, bad); err == nil || errors.Is(err, ErrUnknownVersion) {
		t.Errorf("unknown state: %v", err)
	}
	if _, _, err := DecodeRecord(goldenKey, goldenValue[:20]); err == nil {
		t.Error("truncated value decoded")
	}
	if _, _, err := DecodeRecord(goldenKey[:3], nil); err == nil {
		t.Error("truncated key decoded")
	}
	empty := goldenTxn.clone()
	empty.State = Empty
	if _, err := EncodeValue(empty); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("empty transaction with partitions: %v", err)
	}
}

func TestPartitionFor(t *testing.T) {
	for _, id := range []string{"", "hello", "my-txn", "😀txn"} {
		if got, want := PartitionFor(id, 50), coordkey.PartitionFor(id, 50); got != want {
			t.Errorf("PartitionFor(%q) = %d, want %d", id, got, want)
		}
	}
	if got := PartitionFor("hello", 50); got != 22 { // abs("hello".hashCode()=99162322) % 50
		t.Errorf("PartitionFor(hello) = %d", got)
	}
}

// FuzzDecodeRecord: no input makes DecodeRecord panic, and what it
// decodes encodes back to a value that decodes the same.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(goldenKey, goldenValue)
	f.Add(goldenKey, goldenValue[:30])
	f.Add([]byte{0, 1, 0, 1, 'x'}, []byte{0, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		id, m, err := DecodeRecord(key, value)
		if err != nil || m == nil {
			return
		}
		b, err := EncodeValue(m.Txn)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", m.Txn, err)
		}
		id2, m2, err := DecodeRecord(EncodeKey(id), b)
		if err != nil || id2 != id || !sameTxn(m.Txn, m2.Txn) {
			t.Fatalf("round trip of %q: %+v → %+v, %v", id, m.Txn, m2, err)
		}
	})
}
