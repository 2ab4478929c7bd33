package txn

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// NoProducerID and NoProducerEpoch are Kafka's "none" values
// (RecordBatch.NO_PRODUCER_ID, NO_PRODUCER_EPOCH).
const (
	NoProducerID    int64 = -1
	NoProducerEpoch int16 = -1
)

// Version is a client's transaction version (the transaction.version
// feature level its requests imply): from 2 on (KIP-890 part 2) every
// commit and abort bumps the producer epoch.
type Version int16

// Transaction versions.
const (
	TV0 Version = 0
	TV1 Version = 1
	TV2 Version = 2
)

// bumpsEpoch reports whether ending a transaction bumps the epoch.
func (v Version) bumpsEpoch() bool { return v >= TV2 }

// TopicPartition is one partition in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// PartitionSet is a set of partitions in a transaction.
type PartitionSet map[TopicPartition]struct{}

// Sorted returns the partitions by topic, then partition.
func (s PartitionSet) Sorted() []TopicPartition {
	out := slices.Collect(maps.Keys(s))
	slices.SortFunc(out, func(a, b TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
	return out
}

// ByTopic groups tps under their topics, as the wire forms list them:
// topics in the order they first appear, each with its partitions in the
// order given.
func ByTopic(tps []TopicPartition) (topics []string, partitions [][]int32) {
	idx := map[string]int{}
	for _, tp := range tps {
		i, ok := idx[tp.Topic]
		if !ok {
			i = len(topics)
			idx[tp.Topic] = i
			topics, partitions = append(topics, tp.Topic), append(partitions, nil)
		}
		partitions[i] = append(partitions[i], tp.Partition)
	}
	return topics, partitions
}

// containsAll reports whether every partition of o is in s.
func (s PartitionSet) containsAll(o PartitionSet) bool {
	for tp := range o {
		if _, ok := s[tp]; !ok {
			return false
		}
	}
	return true
}

// Txn is the logged state of a transactional id: what one
// __transaction_state value holds (Kafka's TxnTransitMetadata, and the
// fields of TransactionMetadata). Times are Unix milliseconds, as logged.
type Txn struct {
	ProducerID     int64
	PrevProducerID int64 // producer id before the last transition
	NextProducerID int64 // id to move to once an epoch-exhausting end completes (TV2)
	ProducerEpoch  int16
	// LastProducerEpoch is the epoch before the last bump, so that a
	// retried InitProducerId or EndTxn is recognised; not logged (Kafka
	// does not log it either), so -1 after a load.
	LastProducerEpoch int16
	TimeoutMs         int32
	State             State
	Partitions        PartitionSet
	StartMs           int64 // first partition added; -1 when none
	LastUpdateMs      int64
	ClientVersion     Version
}

// clone returns t with its own partition set.
func (t Txn) clone() Txn {
	t.Partitions = maps.Clone(t.Partitions)
	if t.Partitions == nil {
		t.Partitions = PartitionSet{}
	}
	return t
}

// Metadata is one transactional id's coordinator state (Kafka's
// TransactionMetadata). A change is prepared (a Prepare* method returns
// the target Txn and marks it pending, so no second change can start), then
// logged to __transaction_state, then applied with CompleteTransition, or
// dropped with CancelTransition when the write failed. Metadata is not
// safe for concurrent use; see the package doc.
type Metadata struct {
	TransactionalID string
	Txn

	pending    State
	hasPending bool
	// failedEpochFence: a fence's write failed, so its bumped epoch never
	// reached a client; the next fence reuses the current epoch.
	failedEpochFence bool
}

// NewMetadata returns the metadata of a transactional id first seen by
// InitProducerId, with a freshly allocated producer id and no epoch yet.
func NewMetadata(id string, producerID int64, timeoutMs int32, now time.Time) *Metadata {
	return &Metadata{TransactionalID: id, Txn: Txn{
		ProducerID: producerID, PrevProducerID: NoProducerID, NextProducerID: NoProducerID,
		ProducerEpoch: NoProducerEpoch, LastProducerEpoch: NoProducerEpoch,
		TimeoutMs: timeoutMs, State: Empty, Partitions: PartitionSet{},
		StartMs: -1, LastUpdateMs: now.UnixMilli(),
	}}
}

// Pending returns the state of the prepared transition, if any.
func (m *Metadata) Pending() (State, bool) { return m.pending, m.hasPending }

// CancelTransition drops the pending transition (its write failed).
func (m *Metadata) CancelTransition() { m.hasPending = false }

// FenceFailed records that the write of an abort carrying an epoch fence
// (EndResult.Fence) failed, and drops it: the fenced epoch is already the
// current one in memory and was never returned to a client, so the next
// fence does not bump it again.
func (m *Metadata) FenceFailed() {
	m.failedEpochFence = true
	m.hasPending = false
}

// epochExhausted reports whether epoch leaves no room for a fence:
// clients never get math.MaxInt16, so that the coordinator can always
// bump once more to fence them.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// EpochExhausted reports whether the producer id's epochs are used up.
func (m *Metadata) EpochExhausted() bool { return epochExhausted(m.ProducerEpoch) }

// hasOpenTransaction reports whether a transaction is open or ending.
func (m *Metadata) hasOpenTransaction() bool {
	return m.State == Ongoing || m.State == PrepareAbort || m.State == PrepareCommit
}

// next returns the current state as the base of a transition to s.
func (m *Metadata) next(s State) Txn {
	t := m.Txn.clone()
	t.State = s
	return t
}

// PrepareFenceProducerEpoch prepares PrepareEpochFence: the epoch is
// bumped so that the producer of the ongoing transaction is fenced, and
// the transaction is then aborted (PrepareEndTxn turns the fence into
// PrepareAbort).
func (m *Metadata) PrepareFenceProducerEpoch() (Txn, error) {
	if m.ProducerEpoch == math.MaxInt16 {
		return Txn{}, fmt.Errorf("%w: %s: cannot fence epoch %d, it would overflow", ErrIllegalTransition, m.TransactionalID, m.ProducerEpoch)
	}
	t := m.next(PrepareEpochFence)
	if !m.failedEpochFence {
		t.ProducerEpoch++
	}
	return m.prepare(t)
}

// PrepareIncrementProducerEpoch prepares the Empty state of an
// InitProducerId that keeps the producer id. expectedEpoch is the
// request's epoch (KIP-360), NoProducerEpoch when it has none: a new
// producer bumps the epoch and forgets the last one; the current epoch
// (or none yet) bumps it and remembers the last; the last epoch is a
// retry and changes no epoch; any other is fenced (ErrProducerFenced).
func (m *Metadata) PrepareIncrementProducerEpoch(timeoutMs int32, expectedEpoch int16, now time.Time) (Txn, error) {
	if m.EpochExhausted() {
		return Txn{}, fmt.Errorf("%w: %s: producer id %d has no epochs left", ErrIllegalTransition, m.TransactionalID, m.ProducerID)
	}
	t := m.next(Empty)
	switch {
	case expectedEpoch == NoProducerEpoch:
		t.ProducerEpoch, t.LastProducerEpoch = m.ProducerEpoch+1, NoProducerEpoch
	case m.ProducerEpoch == NoProducerEpoch || expectedEpoch == m.ProducerEpoch:
		t.ProducerEpoch, t.LastProducerEpoch = m.ProducerEpoch+1, m.ProducerEpoch
	case expectedEpoch == m.LastProducerEpoch:
		// a retry of an InitProducerId that succeeded: no new bump
	default:
		return Txn{}, fmt.Errorf("%w: %s: epoch %d is neither the current %d nor the last %d", ErrProducerFenced, m.TransactionalID, expectedEpoch, m.ProducerEpoch, m.LastProducerEpoch)
	}
	t.TimeoutMs, t.Partitions, t.StartMs, t.LastUpdateMs = timeoutMs, PartitionSet{}, -1, now.UnixMilli()
	return m.prepare(t)
}

// PrepareProducerIDRotation prepares the Empty state of an
// InitProducerId that moves to newProducerID at epoch 0, when the epochs
// of the current id are exhausted. recordLastEpoch keeps the old epoch as
// the last one, so that the producer's retry is recognised.
func (m *Metadata) PrepareProducerIDRotation(newProducerID int64, timeoutMs int32, now time.Time, recordLastEpoch bool) (Txn, error) {
	if m.hasOpenTransaction() {
		return Txn{}, fmt.Errorf("%w: %s: cannot rotate the producer id in state %s", ErrIllegalTransition, m.TransactionalID, m.State)
	}
	t := m.next(Empty)
	t.ProducerID, t.ProducerEpoch, t.LastProducerEpoch = newProducerID, 0, NoProducerEpoch
	if recordLastEpoch {
		t.LastProducerEpoch = m.ProducerEpoch
	}
	t.TimeoutMs, t.Partitions, t.StartMs, t.LastUpdateMs = timeoutMs, PartitionSet{}, -1, now.UnixMilli()
	return m.prepare(t)
}

// PrepareAddPartitions prepares Ongoing with the partitions added; the
// transaction starts now unless one is already open.
func (m *Metadata) PrepareAddPartitions(add []TopicPartition, now time.Time, v Version) (Txn, error) {
	t := m.next(Ongoing)
	if m.State == Empty || m.State == CompleteCommit || m.State == CompleteAbort {
		t.StartMs = now.UnixMilli()
	}
	for _, tp := range add {
		t.Partitions[tp] = struct{}{}
	}
	t.LastUpdateMs, t.ClientVersion = now.UnixMilli(), v
	return m.prepare(t)
}

// PrepareAbortOrCommit prepares PrepareCommit or PrepareAbort. For
// version 2 clients the epoch is bumped (the caller made sure it cannot
// overflow, passing in nextProducerID a new producer id when the epoch is
// exhausted, else NoProducerID). noPartitionAdded: a version 2 abort of a
// transaction with no partitions, which starts now.
func (m *Metadata) PrepareAbortOrCommit(s State, v Version, nextProducerID int64, now time.Time, noPartitionAdded bool) (Txn, error) {
	if s != PrepareCommit && s != PrepareAbort {
		return Txn{}, fmt.Errorf("%w: %s: %s is not an end of a transaction", ErrIllegalTransition, m.TransactionalID, s)
	}
	t := m.next(s)
	if v.bumpsEpoch() {
		t.ProducerEpoch, t.LastProducerEpoch = m.ProducerEpoch+1, m.ProducerEpoch
	}
	if noPartitionAdded {
		t.StartMs = now.UnixMilli()
	}
	t.NextProducerID, t.LastUpdateMs, t.ClientVersion = nextProducerID, now.UnixMilli(), v
	return m.prepare(t)
}

// PrepareComplete prepares CompleteCommit or CompleteAbort once every
// marker is written. When a version 2 end exhausted the epoch, the
// producer moves to the next producer id at epoch 0 (the last epoch stays
// the one the client last saw).
func (m *Metadata) PrepareComplete(now time.Time) (Txn, error) {
	s := CompleteAbort
	if m.State == PrepareCommit {
		s = CompleteCommit
	}
	m.failedEpochFence = false // the end is logged, so the fence was too
	t := m.next(s)
	if m.ClientVersion.bumpsEpoch() && m.NextProducerID != NoProducerID {
		t.ProducerID, t.ProducerEpoch = m.NextProducerID, 0
	}
	t.NextProducerID, t.Partitions, t.LastUpdateMs = NoProducerID, PartitionSet{}, now.UnixMilli()
	return m.prepare(t)
}

// PrepareDead prepares Dead: the id expired; the coordinator writes its
// tombstone and removes it, never completing the transition.
func (m *Metadata) PrepareDead() (Txn, error) {
	t := m.next(Dead)
	t.Partitions = PartitionSet{}
	return m.prepare(t)
}

// prepare checks t against Kafka's rules and marks it pending.
func (m *Metadata) prepare(t Txn) (Txn, error) {
	switch {
	case m.hasPending:
		return Txn{}, fmt.Errorf("%w: %s: preparing %s while %s is pending", ErrIllegalTransition, m.TransactionalID, t.State, m.pending)
	case t.ProducerID < 0:
		return Txn{}, fmt.Errorf("%w: %s: producer id %d", ErrIllegalTransition, m.TransactionalID, t.ProducerID)
	case t.State != Dead && t.ProducerEpoch < 0:
		return Txn{}, fmt.Errorf("%w: %s: producer epoch %d", ErrIllegalTransition, m.TransactionalID, t.ProducerEpoch)
	case !ValidTransition(m.State, t.State):
		return Txn{}, fmt.Errorf("%w: %s: %s → %s", ErrIllegalTransition, m.TransactionalID, m.State, t.State)
	}
	t.PrevProducerID = m.ProducerID
	m.pending, m.hasPending = t.State, true
	return t, nil
}
