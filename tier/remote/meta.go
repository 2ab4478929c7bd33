package remote

import (
	"fmt"

	"github.com/strata-broker/strata/tier/local"
)

// State is the life-cycle state of a remote segment copy (Kafka's
// RemoteLogSegmentState).
type State string

// The states of a copy, in order.
const (
	CopyStarted    State = "COPY_STARTED"
	CopyFinished   State = "COPY_FINISHED"
	DeleteStarted  State = "DELETE_STARTED"
	DeleteFinished State = "DELETE_FINISHED"
)

// Segment is the metadata of one remote segment copy.
type Segment struct {
	Topic        string             `json:"topic"`
	Partition    int32              `json:"partition"`
	TopicID      string             `json:"topic_id"` // hex
	CopyID       string             `json:"copy_id"`
	BaseOffset   int64              `json:"base_offset"`
	EndOffset    int64              `json:"end_offset"` // last offset, inclusive
	MaxTimestamp int64              `json:"max_timestamp"`
	Size         int64              `json:"size"` // bytes of the .log object
	LeaderEpoch  int32              `json:"leader_epoch"`
	Epochs       []local.EpochEntry `json:"epochs"`
	State        State              `json:"state"`
	// Copied: the copy reached COPY_FINISHED (kept through the delete
	// states); an interrupted copy never has it.
	Copied    bool  `json:"copied"`
	UpdatedMs int64 `json:"updated_ms"`
	// TxnIndex: the copy has a .txnindex object (the segment's
	// transaction index held an aborted transaction). Copies made
	// without one, or before transaction indexes were uploaded, hold no
	// aborted transaction as far as reads go.
	TxnIndex bool `json:"txn_index,omitempty"`
}

// Name is the segment's record name and object key stem.
func (s *Segment) Name() string { return fmt.Sprintf("%020d-%s", s.BaseOffset, s.CopyID) }
