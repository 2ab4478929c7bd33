package txn

import (
	"context"
	"fmt"
	"time"
)

// The entry points of the transaction APIs: each finds the transactional
// id's shard (ErrNotCoordinator, ErrLoadInProgress), decides with the
// Prepare* methods under the id's lock, logs the transition and applies
// it.

// ProducerIDAndEpoch is the producer a request answers with.
type ProducerIDAndEpoch struct {
	ProducerID    int64
	ProducerEpoch int16
}

// InitProducerID serves an InitProducerId with a transactional id:
// timeoutMs is the transaction timeout (ErrInvalidTxnTimeout beyond
// transaction.max.timeout.ms), expectedID and expectedEpoch the request's
// producer (KIP-360), NoProducerID and NoProducerEpoch when it has none.
// A new id gets a producer id from the allocator. An id with a
// transaction open has it aborted, fencing its producer, and answers
// ErrConcurrentTransactions: the client retries once the abort is done.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, expectedID int64, expectedEpoch int16) (ProducerIDAndEpoch, error) {
	if err := ValidateTimeout(timeoutMs, c.cfg.MaxTimeout); err != nil {
		return ProducerIDAndEpoch{}, err
	}
	newID := func() (int64, error) { return c.pids.Next(ctx) }
	create := func() (*Metadata, error) {
		pid, err := newID()
		if err != nil {
			return nil, fmt.Errorf("txn: %s: allocate a producer id: %w: %w", id, ErrCoordinatorNotAvailable, err)
		}
		return NewMetadata(id, pid, timeoutMs, time.Now()), nil
	}
	var out ProducerIDAndEpoch
	err := c.withTxn(id, create, ErrTransactionalIDNotFound, func(e *entry) error {
		now := time.Now()
		tx, err := e.md.PrepareInitProducerID(timeoutMs, expectedID, expectedEpoch, newID, now)
		if err != nil {
			return err
		}
		if tx.State == PrepareEpochFence {
			if err := c.fenceAndAbort(e, tx.ProducerEpoch, newID, now); err != nil {
				return err
			}
			return fmt.Errorf("%w: %s: its ongoing transaction is being aborted", ErrConcurrentTransactions, id)
		}
		if err := c.write(e, tx, false, now); err != nil {
			return err
		}
		out = ProducerIDAndEpoch{e.md.ProducerID, e.md.ProducerEpoch}
		return nil
	})
	return out, err
}

// fenceAndAbort aborts e's ongoing transaction at the epoch of the fence
// pending on it (the request fenced the producer), and starts its
// markers. e.mu is held.
func (c *Coordinator) fenceAndAbort(e *entry, fenceEpoch int16, newID ProducerIDSource, now time.Time) error {
	md := e.md
	res, err := md.PrepareEndTxn(EndRequest{ProducerID: md.ProducerID, ProducerEpoch: fenceEpoch, Version: md.ClientVersion}, newID, now)
	if err != nil {
		md.CancelTransition()
		return err
	}
	if err := c.write(e, res.Txn, res.Fence, now); err != nil {
		return err
	}
	c.sendMarkers(e)
	return nil
}

// AddPartitions serves an AddPartitionsToTxn (or the partition of
// __consumer_offsets an AddOffsetsToTxn adds) by the producer producerID
// at epoch: the partitions join the transaction, which opens if none
// is. v is the client's transaction version.
func (c *Coordinator) AddPartitions(id string, producerID int64, epoch int16, add []TopicPartition, v Version) error {
	return c.withTxn(id, nil, ErrInvalidProducerIDMapping, func(e *entry) error {
		now := time.Now()
		tx, noChange, err := e.md.PrepareAddPartitionsToTxn(producerID, epoch, add, v, now)
		if err != nil || noChange {
			return err
		}
		return c.write(e, tx, false, now)
	})
}

// VerifyPartitions serves an AddPartitionsToTxn with VerifyOnly
// (Metadata.VerifyPartitions): err is the whole transaction's error
// (ErrInvalidProducerIDMapping for an unknown id, as Kafka answers),
// otherwise each partition's is in the map.
func (c *Coordinator) VerifyPartitions(id string, producerID int64, epoch int16, tps []TopicPartition) (map[TopicPartition]error, error) {
	var out map[TopicPartition]error
	err := c.withTxn(id, nil, ErrInvalidProducerIDMapping, func(e *entry) error {
		var err error
		out, err = e.md.VerifyPartitions(producerID, epoch, tps)
		return err
	})
	return out, err
}

// EndResponse is the answer to an EndTxn: the producer to go on with
// (version 2 ends bump the epoch; NoProducerID for older versions), and
// the partitions whose markers the end writes (none for a retried end).
type EndResponse struct {
	ProducerIDAndEpoch
	Markers []TopicPartition
}

// EndTxn serves an EndTxn: the transaction's PrepareCommit or
// PrepareAbort is logged, the answer given, and the markers written in
// the background (MarkerWriter); the transaction completes once they are.
func (c *Coordinator) EndTxn(ctx context.Context, id string, producerID int64, epoch int16, commit bool, v Version) (EndResponse, error) {
	newID := func() (int64, error) { return c.pids.Next(ctx) }
	out := EndResponse{ProducerIDAndEpoch: ProducerIDAndEpoch{NoProducerID, NoProducerEpoch}}
	err := c.withTxn(id, nil, ErrInvalidProducerIDMapping, func(e *entry) error {
		now := time.Now()
		res, err := e.md.PrepareEndTxn(EndRequest{ProducerID: producerID, ProducerEpoch: epoch, Commit: commit, Version: v, FromClient: true}, newID, now)
		if err != nil {
			return err
		}
		if res.Retry {
			out.ProducerIDAndEpoch = ProducerIDAndEpoch{res.ProducerID, res.ProducerEpoch}
			return nil
		}
		if err := c.write(e, res.Txn, res.Fence, now); err != nil {
			return err
		}
		if v.bumpsEpoch() {
			out.ProducerIDAndEpoch = ProducerIDAndEpoch{e.md.ProducerID, e.md.ProducerEpoch}
		}
		m := markersOf(e)
		out.Markers = m.Partitions
		c.sendMarkers(e)
		return nil
	})
	return out, err
}

// Description is one transactional id as DescribeTransactions shows it.
type Description struct {
	TransactionalID string
	State           State
	ProducerID      int64
	ProducerEpoch   int16
	TimeoutMs       int32
	StartMs         int64 // -1: no transaction open
	Partitions      []TopicPartition
}

// Describe serves DescribeTransactions for one id
// (ErrTransactionalIDNotFound when it is unknown).
func (c *Coordinator) Describe(id string) (Description, error) {
	var d Description
	err := c.withTxn(id, nil, ErrTransactionalIDNotFound, func(e *entry) error {
		d = describe(e.md)
		return nil
	})
	return d, err
}

func describe(md *Metadata) Description {
	d := Description{TransactionalID: md.TransactionalID, State: md.State, ProducerID: md.ProducerID, ProducerEpoch: md.ProducerEpoch,
		TimeoutMs: md.TimeoutMs, StartMs: md.StartMs, Partitions: md.Partitions.Sorted()}
	if !md.hasOpenTransaction() {
		d.StartMs = -1
	}
	return d
}

// ListFilter selects the ids ListTransactions returns: any of States (all
// when empty), of ProducerIDs (all when empty), and open for longer than
// MinDuration (KIP-994; none when not positive).
type ListFilter struct {
	States      []State
	ProducerIDs []int64
	MinDuration time.Duration
}

// List serves ListTransactions: the ids of the loaded partitions that
// pass f. loading reports a led partition still loading (Kafka answers
// COORDINATOR_LOAD_IN_PROGRESS then).
func (c *Coordinator) List(f ListFilter) (out []Description, loading bool) {
	entries, loading := c.entries()
	now := time.Now().UnixMilli()
	for _, e := range entries {
		e.mu.Lock()
		d, ok := describe(e.md), !e.removed && f.match(e.md, now)
		e.mu.Unlock()
		if ok {
			out = append(out, d)
		}
	}
	return out, loading
}

func (f ListFilter) match(md *Metadata, nowMs int64) bool {
	okState := len(f.States) == 0
	for _, s := range f.States {
		okState = okState || s == md.State
	}
	okID := len(f.ProducerIDs) == 0
	for _, id := range f.ProducerIDs {
		okID = okID || id == md.ProducerID
	}
	okDur := f.MinDuration <= 0 || md.hasOpenTransaction() && nowMs-md.StartMs > f.MinDuration.Milliseconds()
	return okState && okID && okDur
}
