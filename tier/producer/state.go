package producer

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// MaxCachedBatches is how many recent batches are remembered per producer
// for duplicate detection; Kafka's producers keep at most 5 requests in
// flight with idempotence enabled.
const MaxCachedBatches = 5

// Sentinel errors returned by Check, wrapped with the details.
var (
	// ErrOutOfOrderSequence: the batch does not continue the producer's
	// sequence (Kafka's OUT_OF_ORDER_SEQUENCE_NUMBER).
	ErrOutOfOrderSequence = errors.New("producer: out of order sequence number")
	// ErrInvalidProducerEpoch: the batch comes from a fenced (older) epoch
	// of the producer (Kafka's INVALID_PRODUCER_EPOCH).
	ErrInvalidProducerEpoch = errors.New("producer: invalid producer epoch")
)

// BatchMeta describes one appended batch of an idempotent producer.
// Transactional marks a batch of a transaction; it is not kept in the
// cache (a cached batch has it false).
type BatchMeta struct {
	ProducerID    int64
	Epoch         int16
	FirstSeq      int32
	LastSeq       int32
	FirstOffset   int64
	LastOffset    int64
	MaxTimestamp  int64
	Transactional bool
}

// noTxn is entry.txnFirst when the producer has no ongoing transaction.
const noTxn = -1

// entry is the state of one producer id.
type entry struct {
	epoch int16
	// batches are the last MaxCachedBatches batches of the current epoch,
	// oldest first. Empty only after a marker moved the producer to a new
	// epoch (or a snapshot recorded that): the next batch of that epoch
	// must then start at sequence 0.
	batches []BatchMeta
	// lastTs is the timestamp of the producer's last batch (its max
	// timestamp) or marker, for expiry, as Kafka's lastTimestamp.
	lastTs int64
	// txnFirst is the first offset of the producer's ongoing transaction
	// (noTxn: none); coordEpoch the coordinator epoch of its last marker
	// (-1: none yet).
	txnFirst   int64
	coordEpoch int32
}

// newEntry is the entry of a producer first seen at epoch.
func newEntry(epoch int16) *entry {
	return &entry{epoch: epoch, lastTs: -1, txnFirst: noTxn, coordEpoch: -1}
}

// last returns the newest cached batch; ok is false when there is none.
func (e *entry) last() (BatchMeta, bool) {
	if len(e.batches) == 0 {
		return BatchMeta{}, false
	}
	return e.batches[len(e.batches)-1], true
}

// clone returns a deep copy, so a Pending overlay can change it.
func (e *entry) clone() *entry {
	c := *e
	c.batches = slices.Clone(e.batches)
	return &c
}

// setEpoch moves the producer to epoch; a new epoch forgets the old
// epoch's batches, as Kafka does.
func (e *entry) setEpoch(epoch int16) {
	if epoch != e.epoch {
		e.epoch = epoch
		e.batches = e.batches[:0]
	}
}

// update records an appended batch, and the start of a transaction for
// the first transactional batch after none was open.
func (e *entry) update(m BatchMeta) {
	e.setEpoch(m.Epoch)
	if m.Transactional && e.txnFirst == noTxn {
		e.txnFirst = m.FirstOffset
	}
	e.lastTs = m.MaxTimestamp
	m.Transactional = false
	if len(e.batches) == MaxCachedBatches {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:MaxCachedBatches-1]
	}
	e.batches = append(e.batches, m)
}

// check classifies m against the producer's entry e (nil: unknown producer).
func check(e *entry, m BatchMeta) (*BatchMeta, error) {
	if e == nil {
		return nil, nil
	}
	if m.Epoch == e.epoch {
		for i := range e.batches {
			if b := e.batches[i]; b.FirstSeq == m.FirstSeq && b.LastSeq == m.LastSeq {
				return &b, nil
			}
		}
	}
	switch {
	case m.Epoch < e.epoch:
		return nil, fmt.Errorf("producer %d: epoch %d is older than current epoch %d: %w",
			m.ProducerID, m.Epoch, e.epoch, ErrInvalidProducerEpoch)
	case m.Epoch > e.epoch:
		if m.FirstSeq != 0 {
			return nil, fmt.Errorf("producer %d: new epoch %d must start at sequence 0, got %d: %w",
				m.ProducerID, m.Epoch, m.FirstSeq, ErrOutOfOrderSequence)
		}
		return nil, checkTxn(e, m)
	}
	last, ok := e.last()
	switch {
	case !ok && m.FirstSeq != 0:
		return nil, fmt.Errorf("producer %d epoch %d: first batch of the epoch must start at sequence 0, got %d: %w",
			m.ProducerID, m.Epoch, m.FirstSeq, ErrOutOfOrderSequence)
	case ok && !inSequence(last.LastSeq, m.FirstSeq):
		return nil, fmt.Errorf("producer %d epoch %d: sequence %d does not follow %d: %w",
			m.ProducerID, m.Epoch, m.FirstSeq, last.LastSeq, ErrOutOfOrderSequence)
	}
	return nil, checkTxn(e, m)
}

// inSequence reports whether next directly follows last; sequences wrap
// from MaxInt32 to 0.
func inSequence(last, next int32) bool {
	if last == math.MaxInt32 {
		return next == 0
	}
	return next == last+1
}

// State is the idempotent-producer state of one partition, with its
// transactions (txn.go).
type State struct {
	producers map[int64]*entry
	// ongoing are the open transactions, unreplicated the completed ones
	// whose marker may still be above the high watermark; both sorted by
	// first offset.
	ongoing      []txnSpan
	unreplicated []txnSpan
}

// NewState returns an empty state.
func NewState() *State { return &State{producers: make(map[int64]*entry)} }

// Check classifies a batch about to be appended as leader. dup != nil means
// the batch is a retry of a cached batch: the caller must not append it and
// should answer with dup's offsets. err wraps ErrOutOfOrderSequence or
// ErrInvalidProducerEpoch. Check does not change the state.
func (s *State) Check(m BatchMeta) (dup *BatchMeta, err error) {
	return check(s.producers[m.ProducerID], m)
}

// Update records a batch that was appended (as leader after Check, or as
// follower or during recovery without it). Batches without a producer id
// are ignored.
func (s *State) Update(m BatchMeta) {
	if m.ProducerID < 0 {
		return
	}
	e := s.producers[m.ProducerID]
	if e == nil {
		e = newEntry(m.Epoch)
		s.producers[m.ProducerID] = e
	}
	open := e.txnFirst
	e.update(m)
	if open == noTxn && e.txnFirst != noTxn {
		s.startTxn(m.ProducerID, e.txnFirst)
	}
}

// Len is the number of producers tracked.
func (s *State) Len() int { return len(s.producers) }

// Last returns the newest batch appended by producer pid, for
// DescribeProducers and tests.
func (s *State) Last(pid int64) (BatchMeta, bool) {
	e := s.producers[pid]
	if e == nil {
		return BatchMeta{}, false
	}
	return e.last()
}

// Epoch returns producer pid's current epoch, if it is tracked.
func (s *State) Epoch(pid int64) (int16, bool) {
	e := s.producers[pid]
	if e == nil {
		return 0, false
	}
	return e.epoch, true
}

// ExpireBefore forgets producers whose last batch or marker has a
// timestamp before ts (Kafka's producer.id.expiration.ms) and returns how
// many were removed; a producer with an ongoing transaction is kept, as
// in Kafka. A later batch from such a producer is accepted as from an
// unknown producer.
func (s *State) ExpireBefore(ts int64) int {
	n := 0
	for pid, e := range s.producers {
		if e.txnFirst == noTxn && e.lastTs < ts {
			delete(s.producers, pid)
			n++
		}
	}
	return n
}

// Pending stages the effects of the batches of one append, so that later
// batches of the append are checked against earlier ones before anything
// is written. It never changes the State: the log calls State.Update for
// each batch once it is written.
type Pending struct {
	s       *State
	changed map[int64]*entry
}

// Begin starts staging an append.
func (s *State) Begin() *Pending { return &Pending{s: s} }

// lookup returns the staged entry of pid, falling back to the state's.
func (p *Pending) lookup(pid int64) *entry {
	if e, ok := p.changed[pid]; ok {
		return e
	}
	return p.s.producers[pid]
}

// Check is State.Check as if the staged batches were already appended.
func (p *Pending) Check(m BatchMeta) (dup *BatchMeta, err error) {
	return check(p.lookup(m.ProducerID), m)
}

// Update stages a batch; batches without a producer id are ignored.
func (p *Pending) Update(m BatchMeta) {
	if m.ProducerID < 0 {
		return
	}
	e, ok := p.changed[m.ProducerID]
	if !ok {
		if cur := p.s.producers[m.ProducerID]; cur != nil {
			e = cur.clone()
		} else {
			e = newEntry(m.Epoch)
		}
		if p.changed == nil {
			p.changed = make(map[int64]*entry)
		}
		p.changed[m.ProducerID] = e
	}
	e.update(m)
}

// Active describes one producer of a partition's state, as
// DescribeProducers answers it.
type Active struct {
	ProducerID       int64
	Epoch            int16
	LastSequence     int32 // of its newest batch; -1: none at this epoch
	LastTimestamp    int64 // of its newest batch or marker; -1: none
	CoordinatorEpoch int32 // of its last marker; -1: none
	TxnStartOffset   int64 // first offset of its ongoing transaction; -1: none
}

// Producers returns every producer of the state, by producer id.
func (s *State) Producers() []Active {
	out := make([]Active, 0, len(s.producers))
	for pid, e := range s.producers {
		a := Active{ProducerID: pid, Epoch: e.epoch, LastSequence: -1, LastTimestamp: e.lastTs,
			CoordinatorEpoch: e.coordEpoch, TxnStartOffset: e.txnFirst}
		if m, ok := e.last(); ok {
			a.LastSequence = m.LastSeq
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b Active) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}
