package group

import (
	"errors"
	"fmt"
	"github.com/strata-broker/strata/broker/coordshard"
	"time"

	"github.com/strata-broker/strata/broker/coordlog"
	"github.com/strata-broker/strata/tier/producer"
	"github.com/strata-broker/strata/tier/record"
)

// TxnCommitRequest is a TxnOffsetCommit: offsets committed inside the
// transaction of producer ProducerID, which become visible when its
// COMMIT marker lands on the group's partition (CompleteTxn). Generation
// -1 with an empty member id skips the member checks (KIP-447 clients
// send them).
type TxnCommitRequest struct {
	Group           string
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Generation      int32 // the member epoch for KIP-848 groups
	MemberID        string
	InstanceID      *string
	Offsets         []CommitOffset
}

// pendingOffset is an offset of an open transaction. superseded: a later
// non-transactional commit of the partition wins over it, as Kafka keeps
// the offset appended last.
type pendingOffset struct {
	Offset
	superseded bool
}

// TxnCommitOffsets appends the offsets as one transactional batch of the
// producer and keeps them pending until the transaction completes (Kafka's
// handleTxnCommitOffsets). A missing group is created, as in Kafka. It
// returns one error per offset (nil: pending).
func (c *Coordinator) TxnCommitOffsets(req TxnCommitRequest) []error {
	errs := make([]error, len(req.Offsets))
	err := c.withGroup(req.Group, createClassic, func(g group) error {
		if err := g.validateTxnOffsetCommit(req.MemberID, req.InstanceID, req.Generation); err != nil {
			return err
		}
		return g.core().txnCommit(req, errs)
	})
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// txnCommit writes the offsets whose metadata fits as a transactional
// batch and adds them to the producer's pending offsets.
func (gc *groupCore) txnCommit(req TxnCommitRequest, errs []error) error {
	now := time.Now()
	var recs []record.Record
	var buf []byte
	for i := range req.Offsets {
		o := &req.Offsets[i]
		if o.CommitTimestamp <= 0 {
			o.CommitTimestamp = now.UnixMilli()
		}
		if len(o.Metadata) > gc.c.cfg.MaxMetadataBytes {
			errs[i] = ErrMetadataTooLarge
			continue
		}
		var r record.Record
		buf, r = offsetRecord(buf, gc.name, o.TopicPartition, &o.Offset)
		recs = append(recs, r)
	}
	if len(recs) == 0 {
		return nil
	}
	if err := gc.sh.appendTxn(recs, now, req.ProducerID, req.ProducerEpoch); err != nil {
		return err
	}
	pending := gc.pendingTxn[req.ProducerID]
	if pending == nil {
		pending = map[TopicPartition]*pendingOffset{}
		if gc.pendingTxn == nil {
			gc.pendingTxn = map[int64]map[TopicPartition]*pendingOffset{}
		}
		gc.pendingTxn[req.ProducerID] = pending
	}
	for i := range req.Offsets {
		if errs[i] == nil {
			pending[req.Offsets[i].TopicPartition] = &pendingOffset{Offset: req.Offsets[i].Offset}
		}
	}
	gc.c.Update(func(coordshard.Locked[*shard]) { // lock order: group → table
		if gc.sh.txnGroups == nil {
			gc.sh.txnGroups = map[int64]map[string]bool{}
		}
		if gc.sh.txnGroups[req.ProducerID] == nil {
			gc.sh.txnGroups[req.ProducerID] = map[string]bool{}
		}
		gc.sh.txnGroups[req.ProducerID][gc.name] = true
	})
	return nil
}

// appendTxn is append for a transactional batch of the producer. An
// older producer epoch than the log's keeps the log's error
// (INVALID_PRODUCER_EPOCH).
func (sh *shard) appendTxn(recs []record.Record, now time.Time, pid int64, epoch int16) error {
	err := sh.Part.AppendTxn(recs, now, pid, epoch)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, producer.ErrInvalidProducerEpoch), errors.Is(err, producer.ErrInvalidTxnState):
		return fmt.Errorf("group: %w", err)
	case errors.Is(err, coordlog.ErrNotLeader):
		return fmt.Errorf("group: %w: %w", ErrNotCoordinator, err)
	}
	return fmt.Errorf("group: %w: %w", ErrCoordinatorNotAvailable, err)
}

// CompleteTxn applies the COMMIT (commit) or ABORT marker of producer
// producerID that was written to __consumer_offsets partition index:
// the producer's pending offsets of the partition's groups become
// committed offsets, unless superseded, or are dropped (Kafka's
// onTransactionCompleted). A partition not led here has none.
func (c *Coordinator) CompleteTxn(index int32, producerID int64, commit bool) {
	var names []string
	c.Update(func(l coordshard.Locked[*shard]) {
		if sh, ok := l.Shard(index); ok {
			for name := range sh.txnGroups[producerID] {
				names = append(names, name)
			}
			delete(sh.txnGroups, producerID)
		}
	})
	for _, name := range names {
		// A group replaced by one of the other kind meanwhile handed its
		// pending offsets over: withGroup finds the new one.
		_ = c.withGroup(name, createNone, func(g group) error {
			g.core().completeTxn(producerID, commit)
			return nil
		})
	}
}

// completeTxn ends the producer's pending offsets of the group.
func (gc *groupCore) completeTxn(producerID int64, commit bool) {
	pending := gc.pendingTxn[producerID]
	delete(gc.pendingTxn, producerID)
	if !commit {
		return
	}
	for tp, p := range pending {
		if !p.superseded {
			gc.offsets[tp] = p.Offset
		}
	}
}

// supersede marks the pending offsets of tp as older than a commit or
// deletion appended after them: a COMMIT marker then keeps that one.
func (gc *groupCore) supersede(tp TopicPartition) {
	for _, pending := range gc.pendingTxn {
		if p := pending[tp]; p != nil {
			p.superseded = true
		}
	}
}

// hasPendingTxn reports whether an open transaction commits an offset
// of tp.
func (gc *groupCore) hasPendingTxn(tp TopicPartition) bool {
	for _, pending := range gc.pendingTxn {
		if pending[tp] != nil {
			return true
		}
	}
	return false
}
