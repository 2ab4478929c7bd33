package producer

import (
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
type BatchMeta struct {
	ProducerID   int64
	Epoch        int16
	FirstSeq     int32
	LastSeq      int32
	FirstOffset  int64
	LastOffset   int64
	MaxTimestamp int64
}

// entry is the state of one producer id.
type entry struct {
	epoch int16
	// batches are the last MaxCachedBatches batches of the current epoch,
	// oldest first; never empty.
	batches []BatchMeta
	// TODO(transactions): the first offset of the producer's ongoing
	// transaction and the coordinator epoch of its last marker belong here
	// (and in the snapshot); the log will derive the last stable offset
	// from them and control batches will end the transaction.
}

// last returns the newest cached batch.
func (e *entry) last() BatchMeta { return e.batches[len(e.batches)-1] }

// clone returns a deep copy, so a Pending overlay can change it.
func (e *entry) clone() *entry {
	return &entry{epoch: e.epoch, batches: slices.Clone(e.batches)}
}

// update records an appended batch. A new epoch forgets the old epoch's
// batches, as Kafka does.
func (e *entry) update(m BatchMeta) {
	if m.Epoch != e.epoch {
		e.epoch = m.Epoch
		e.batches = e.batches[:0]
	}
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
		return nil, nil
	}
	if last := e.last().LastSeq; !inSequence(last, m.FirstSeq) {
		return nil, fmt.Errorf("producer %d epoch %d: sequence %d does not follow %d: %w",
			m.ProducerID, m.Epoch, m.FirstSeq, last, ErrOutOfOrderSequence)
	}
	return nil, nil
}

// inSequence reports whether next directly follows last; sequences wrap
// from MaxInt32 to 0.
func inSequence(last, next int32) bool {
	if last == math.MaxInt32 {
		return next == 0
	}
	return next == last+1
}

// State is the idempotent-producer state of one partition.
type State struct {
	producers map[int64]*entry
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
		e = &entry{epoch: m.Epoch}
		s.producers[m.ProducerID] = e
	}
	e.update(m)
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
	return e.last(), true
}

// ExpireBefore forgets producers whose newest batch has a MaxTimestamp
// before ts (Kafka's producer.id.expiration.ms) and returns how many were
// removed. A later batch from such a producer is accepted as from an
// unknown producer.
func (s *State) ExpireBefore(ts int64) int {
	n := 0
	for pid, e := range s.producers {
		if e.last().MaxTimestamp < ts {
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
			e = &entry{epoch: m.Epoch}
		}
		if p.changed == nil {
			p.changed = make(map[int64]*entry)
		}
		p.changed[m.ProducerID] = e
	}
	e.update(m)
}
