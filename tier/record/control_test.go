package record

import (
	"bytes"
	"errors"
	"testing"
)

func TestEndTxnMarkerRoundTrip(t *testing.T) {
	for _, m := range []EndTxnMarker{{Commit: true, CoordinatorEpoch: 7}, {CoordinatorEpoch: 0}, {CoordinatorEpoch: -1}} {
		b, err := BuildEndTxnMarker(BuildOptions{BaseOffset: 40, ProducerID: 9, ProducerEpoch: 3, FirstTimestamp: 1234}, m)
		if err != nil {
			t.Fatal(err)
		}
		if err := Validate(b, ValidateOptions{AllowControl: true}); err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		if !b.IsControl() || !b.IsTransactional() || b.ProducerID() != 9 || b.ProducerEpoch() != 3 || b.BaseSequence() != -1 || b.NumRecords() != 1 {
			t.Fatalf("%+v: header control %v txn %v pid %d epoch %d seq %d records %d", m,
				b.IsControl(), b.IsTransactional(), b.ProducerID(), b.ProducerEpoch(), b.BaseSequence(), b.NumRecords())
		}
		recs, _ := b.Records()
		wantKey := []byte{0, 0, 0, 0}
		if m.Commit {
			wantKey[3] = 1
		}
		if !bytes.Equal(recs[0].Key, wantKey) || len(recs[0].Value) != 6 {
			t.Fatalf("%+v: key %x value %x", m, recs[0].Key, recs[0].Value)
		}
		got, ok, err := b.EndTxnMarker()
		if err != nil || !ok || got != m {
			t.Fatalf("parsed %+v ok %v err %v, want %+v", got, ok, err, m)
		}
	}
}

func TestEndTxnMarkerInvalid(t *testing.T) {
	control := func(key, val []byte) Batch {
		return NewBatch(BuildOptions{Control: true, Transactional: true, Idempotent: true, ProducerID: 1, BaseSequence: -1},
			Record{Key: key, Value: val})
	}
	val := []byte{0, 0, 0, 0, 0, 5}
	for name, tc := range map[string]struct {
		b  Batch
		ok bool
	}{
		"data batch":         {NewBatch(BuildOptions{}, Record{Value: []byte("x")}), false},
		"short key":          {control([]byte{0, 0, 0}, val), false},
		"negative version":   {control([]byte{0x80, 0, 0, 1}, val), false},
		"leader change type": {control([]byte{0, 0, 0, 2}, val), false},
		"short value":        {control([]byte{0, 0, 0, 1}, val[:5]), false},
		"negative value ver": {control([]byte{0, 0, 0, 1}, []byte{0xff, 0xff, 0, 0, 0, 1}), false},
	} {
		if _, ok, err := tc.b.EndTxnMarker(); ok || !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("%s: ok %v err %v", name, ok, err)
		}
	}
	// A newer key or value version parses as version 0, as in Kafka.
	m, ok, err := control([]byte{0, 1, 0, 1, 9}, []byte{0, 1, 0, 0, 0, 5, 9}).EndTxnMarker()
	if err != nil || !ok || m != (EndTxnMarker{Commit: true, CoordinatorEpoch: 5}) {
		t.Fatalf("newer versions: %+v %v %v", m, ok, err)
	}
	// A control batch whose marker the cleaner removed.
	empty := NewBatch(BuildOptions{Control: true, Transactional: true, Idempotent: true, ProducerID: 1, LastOffsetDelta: 0})
	if _, ok, err := empty.EndTxnMarker(); ok || err != nil {
		t.Fatalf("empty control batch: ok %v err %v", ok, err)
	}
}
