package remote

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"

	"github.com/strata-broker/strata/metadata"
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
}

// Name is the segment's record name and object key stem.
func (s *Segment) Name() string { return fmt.Sprintf("%020d-%s", s.BaseOffset, s.CopyID) }

// MetaStore keeps remote-segment records per partition, fenced by leader
// epoch (implemented by etcdstore.Store and MemMeta).
type MetaStore interface {
	// ListRemoteSegments returns the partition's records in name order.
	ListRemoteSegments(ctx context.Context, id metadata.TopicID, partition int32) (names []string, values [][]byte, err error)
	// PutRemoteSegment writes (value nil: deletes) a record unless a newer
	// leader epoch has written for the partition.
	PutRemoteSegment(ctx context.Context, id metadata.TopicID, partition int32, name string, value []byte, leaderEpoch int32) error
	// ClaimRemoteSegments raises the partition's fence to leaderEpoch
	// (failing if a newer epoch holds it) and returns the records as of
	// then, in name order, in one step: once it returns, no older leader
	// can add a record the caller has not seen.
	ClaimRemoteSegments(ctx context.Context, id metadata.TopicID, partition int32, leaderEpoch int32) (names []string, values [][]byte, err error)
}

// ErrFenced is returned by MemMeta for a write from an older leader epoch.
var ErrFenced = fmt.Errorf("remote: write fenced by a newer leader epoch")

// MemMeta is an in-memory MetaStore for tests and single-process use.
type MemMeta struct {
	mu     sync.Mutex
	fences map[string]int32
	recs   map[string]map[string][]byte
}

// NewMemMeta returns an empty MemMeta.
func NewMemMeta() *MemMeta {
	return &MemMeta{fences: map[string]int32{}, recs: map[string]map[string][]byte{}}
}

func memKey(id metadata.TopicID, p int32) string {
	return fmt.Sprintf("%s/%d", hex.EncodeToString(id[:]), p)
}

// ListRemoteSegments implements MetaStore.
func (m *MemMeta) ListRemoteSegments(_ context.Context, id metadata.TopicID, p int32) ([]string, [][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	names, vals := m.listLocked(id, p)
	return names, vals, nil
}

// ClaimRemoteSegments implements MetaStore.
func (m *MemMeta) ClaimRemoteSegments(_ context.Context, id metadata.TopicID, p int32, epoch int32) ([]string, [][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.fenceLocked(memKey(id, p), epoch); err != nil {
		return nil, nil, err
	}
	names, vals := m.listLocked(id, p)
	return names, vals, nil
}

func (m *MemMeta) listLocked(id metadata.TopicID, p int32) ([]string, [][]byte) {
	recs := m.recs[memKey(id, p)]
	var names []string
	for n := range recs {
		names = append(names, n)
	}
	slices.Sort(names)
	vals := make([][]byte, len(names))
	for i, n := range names {
		vals[i] = slices.Clone(recs[n])
	}
	return names, vals
}

// fenceLocked raises k's fence to epoch unless a newer epoch holds it.
func (m *MemMeta) fenceLocked(k string, epoch int32) error {
	if f, ok := m.fences[k]; ok && f > epoch {
		return fmt.Errorf("%w: epoch %d < %d", ErrFenced, epoch, f)
	}
	m.fences[k] = epoch
	return nil
}

// PutRemoteSegment implements MetaStore.
func (m *MemMeta) PutRemoteSegment(_ context.Context, id metadata.TopicID, p int32, name string, value []byte, epoch int32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey(id, p)
	if err := m.fenceLocked(k, epoch); err != nil {
		return err
	}
	if m.recs[k] == nil {
		m.recs[k] = map[string][]byte{}
	}
	if value == nil {
		delete(m.recs[k], name)
	} else {
		m.recs[k][name] = slices.Clone(value)
	}
	return nil
}
