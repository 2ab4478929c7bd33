package coordlog

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
)

// ErrNoProducerState: the log keeps no producer state, so a
// transactional batch cannot be numbered (AppendTxn).
var ErrNoProducerState = errors.New("coordinator log keeps no producer state")

// producerLog is a Log whose local log keeps the producer state
// (*partition.Partition, and test logs).
type producerLog interface {
	Log() *local.Log
}

// AppendTxn writes recs as one transactional batch of producer
// producerID at producerEpoch (a transactional offset commit, which the
// producer's COMMIT or ABORT marker completes later) and returns once it
// is committed, as Append. The coordinator writes these batches for the
// producer, as Kafka's coordinator-origin appends, so it numbers them
// itself: after the producer's last batch in the log at the same epoch,
// from 0 at a new one. Appends of one Partition are serialised so that
// two of one producer do not take the same sequence. An older epoch than
// the producer's fails with the log's producer.ErrInvalidProducerEpoch.
func (p *Partition) AppendTxn(recs []record.Record, now time.Time, producerID int64, producerEpoch int16) error {
	pl, ok := p.Log.(producerLog)
	if !ok {
		return fmt.Errorf("append to %s-%d: %w", p.Topic, p.Index, ErrNoProducerState)
	}
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	seq := int32(0)
	if last, ok := pl.Log().ProducerLastBatch(producerID); ok && last.Epoch == producerEpoch {
		seq = last.LastSeq + 1
		if last.LastSeq == math.MaxInt32 {
			seq = 0
		}
	}
	return p.append(recs, now, record.BuildOptions{Transactional: true, Idempotent: true,
		ProducerID: producerID, ProducerEpoch: producerEpoch, BaseSequence: seq})
}
