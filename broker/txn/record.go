package txn

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/coordkey"
)

// TopicName is Kafka's compacted internal topic of transaction state.
const TopicName = "__transaction_state"

// Record versions: the key's int16 prefix (Kafka's TRANSACTION_LOG
// coordinator record type), and the value version written: 1, the
// flexible TransactionLogValue with its tagged fields, which Kafka writes
// once transaction.version is 1 or more (Strata finalizes 2). Version 0
// values are read too.
const (
	keyVersion   int16 = 0
	valueVersion int16 = 1
)

// PartitionFor is the __transaction_state partition (of n) whose leader
// coordinates transactionalID: Kafka's abs(hashCode) % n, the function of
// __consumer_offsets too.
func PartitionFor(transactionalID string, n int32) int32 {
	return coordkey.PartitionFor(transactionalID, n)
}

// EncodeKey is the record key of a transactional id (TransactionLogKey).
func EncodeKey(transactionalID string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version, k.TransactionalID = keyVersion, transactionalID
	return k.AppendTo(nil)
}

// Tombstone is the record of an expired transactional id: its key with a
// null value, which compaction removes after delete.retention.ms.
func Tombstone(transactionalID string) (key, value []byte) {
	return EncodeKey(transactionalID), nil
}

// EncodeValue is the record value of t (TransactionLogValue v1). An Empty
// transaction logs no partitions (a null array), as Kafka does.
func EncodeValue(t Txn) ([]byte, error) {
	if t.State == Empty && len(t.Partitions) != 0 {
		return nil, fmt.Errorf("%w: an empty transaction with %d partitions", ErrIllegalTransition, len(t.Partitions))
	}
	v := kmsg.NewTxnMetadataValue()
	v.Version = valueVersion
	v.ProducerID, v.ProducerEpoch, v.TimeoutMillis, v.State = t.ProducerID, t.ProducerEpoch, t.TimeoutMs, t.State
	v.LastUpdateTimestamp, v.StartTimestamp = t.LastUpdateMs, t.StartMs
	v.PreviousProducerID, v.NextProducerID = t.PrevProducerID, t.NextProducerID
	v.ClientTransactionVersion = int16(t.ClientVersion)
	if t.State != Empty {
		v.Topics = []kmsg.TxnMetadataValueTopic{}
		for _, tp := range t.Partitions.Sorted() {
			if n := len(v.Topics); n == 0 || v.Topics[n-1].Topic != tp.Topic {
				v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
			}
			last := &v.Topics[len(v.Topics)-1]
			last.Partitions = append(last.Partitions, tp.Partition)
		}
	}
	return v.AppendTo(nil), nil
}

// DecodeRecord reads one __transaction_state record: the transactional id,
// and its metadata, nil for a tombstone. An unknown key or value version
// is ErrUnknownVersion (a loader skips the record, as Kafka does); a
// malformed record or an unknown state is an error.
func DecodeRecord(key, value []byte) (string, *Metadata, error) {
	var k kmsg.TxnMetadataKey
	err := k.ReadFrom(key) // reads the version first, even when the rest fails
	if len(key) >= 2 && k.Version != keyVersion {
		return "", nil, fmt.Errorf("%w: key version %d", ErrUnknownVersion, k.Version)
	}
	if err != nil {
		return "", nil, fmt.Errorf("decode __transaction_state key: %w", err)
	}
	if value == nil {
		return k.TransactionalID, nil, nil
	}
	var v kmsg.TxnMetadataValue
	err = v.ReadFrom(value)
	if len(value) >= 2 && (v.Version < 0 || v.Version > valueVersion) {
		return "", nil, fmt.Errorf("%w: value version %d of %q", ErrUnknownVersion, v.Version, k.TransactionalID)
	}
	if err != nil {
		return "", nil, fmt.Errorf("decode __transaction_state value of %q: %w", k.TransactionalID, err)
	}
	if !validState(v.State) {
		return "", nil, fmt.Errorf("decode __transaction_state value of %q: unknown state %d", k.TransactionalID, v.State)
	}
	m := &Metadata{TransactionalID: k.TransactionalID, Txn: Txn{
		ProducerID: v.ProducerID, PrevProducerID: v.PreviousProducerID, NextProducerID: v.NextProducerID,
		ProducerEpoch: v.ProducerEpoch, LastProducerEpoch: NoProducerEpoch,
		TimeoutMs: v.TimeoutMillis, State: v.State, Partitions: PartitionSet{},
		StartMs: v.StartTimestamp, LastUpdateMs: v.LastUpdateTimestamp,
		ClientVersion: Version(v.ClientTransactionVersion),
	}}
	if v.State != Empty {
		for _, t := range v.Topics {
			for _, p := range t.Partitions {
				m.Partitions[TopicPartition{t.Topic, p}] = struct{}{}
			}
		}
	}
	return k.TransactionalID, m, nil
}
