package record

import (
	"encoding/binary"
	"fmt"
)

// ControlType is the type of a control record, from its key (Kafka's
// ControlRecordType): version int16 | type int16, big-endian.
type ControlType int16

// The control record types of transaction markers.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

// Sizes of a transaction marker's record key and value (version 0).
const (
	controlKeySize   = 2 + 2 // version int16 | type int16
	endTxnValueSize  = 2 + 4 // version int16 | coordinatorEpoch int32
	endTxnKeyVersion = 0
)

// EndTxnMarker is the record of a COMMIT or ABORT control batch, which
// the partition leader writes for the transaction coordinator (Kafka's
// EndTransactionMarker).
type EndTxnMarker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// controlType is the marker's control record type.
func (m EndTxnMarker) controlType() ControlType {
	if m.Commit {
		return ControlCommit
	}
	return ControlAbort
}

// EndTxnMarker parses the marker of a control batch. ok is false for a
// control batch without records (the cleaner removed the marker once its
// transaction was gone, as Kafka's does). A batch that is not a control
// batch, a control type other than COMMIT or ABORT, or a key or value too
// short or of a negative version is ErrInvalidRecord; as in Kafka, a
// newer version is parsed as version 0.
func (b Batch) EndTxnMarker() (m EndTxnMarker, ok bool, err error) {
	if !b.IsControl() {
		return m, false, fmt.Errorf("not a control batch: %w", ErrInvalidRecord)
	}
	recs, err := b.Records()
	if err != nil {
		return m, false, fmt.Errorf("control batch: %w", err)
	}
	if len(recs) == 0 {
		return m, false, nil
	}
	key, val := recs[0].Key, recs[0].Value
	be := binary.BigEndian
	if len(key) < controlKeySize || int16(be.Uint16(key)) < 0 {
		return m, false, fmt.Errorf("control record key %x: %w", key, ErrInvalidRecord)
	}
	switch t := ControlType(be.Uint16(key[2:])); t {
	case ControlAbort, ControlCommit:
		m.Commit = t == ControlCommit
	default:
		return m, false, fmt.Errorf("control record type %d is not a transaction marker: %w", t, ErrInvalidRecord)
	}
	if len(val) < endTxnValueSize || int16(be.Uint16(val)) < 0 {
		return m, false, fmt.Errorf("transaction marker value %x: %w", val, ErrInvalidRecord)
	}
	m.CoordinatorEpoch = int32(be.Uint32(val[2:]))
	return m, true, nil
}

// BuildEndTxnMarker makes the control batch of one marker record for the
// producer in opts (Transactional, Control and Idempotent are set; the
// producer id and epoch are the transaction's), as a leader writes it on
// WriteTxnMarkers.
func BuildEndTxnMarker(opts BuildOptions, m EndTxnMarker) (Batch, error) {
	opts.Transactional, opts.Control, opts.Idempotent = true, true, true
	opts.BaseSequence = -1
	opts.Codec = None
	be := binary.BigEndian
	key := be.AppendUint16(be.AppendUint16(nil, endTxnKeyVersion), uint16(m.controlType()))
	val := be.AppendUint32(be.AppendUint16(nil, 0), uint32(m.CoordinatorEpoch))
	b, err := Build(opts, []Record{{Key: key, Value: val}})
	if err != nil {
		return nil, fmt.Errorf("build transaction marker: %w", err)
	}
	return b, nil
}
