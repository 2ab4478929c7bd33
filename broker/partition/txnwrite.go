package partition

import (
	"fmt"

	"github.com/strata-broker/strata/tier/local"
)

// AppendMarker writes a transaction marker (WriteTxnMarkers, the
// coordinator's COMMIT or ABORT) as leader at leaderEpoch (-1: at any
// epoch) and returns its offset, fenced like AppendAsLeader:
// ErrNotLeaderOrFollower when the partition no longer has that role at
// that epoch. The log checks the marker first (tier/local): an older
// producer epoch wraps producer.ErrInvalidProducerEpoch, an older
// coordinator epoch producer.ErrTransactionCoordinatorFenced, and nothing
// is written. The marker's offset counts for the high watermark and wakes
// waiting fetches as any append does. The producer's VerificationGuard is
// dropped: its next transaction on the partition is verified anew.
func (p *Partition) AppendMarker(leaderEpoch int32, m local.TxnMarker) (int64, error) {
	var offset int64
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	p.endTxnVerification(m.ProducerID)
	err := p.asLeader(leaderEpoch, func(epoch int32) error {
		var err error
		offset, err = p.log.AppendMarker(m, epoch)
		return err
	})
	if err != nil {
		return -1, fmt.Errorf("write transaction marker to %s-%d: %w", p.Topic, p.Index, err)
	}
	p.advanceHighWatermark()
	p.wake()
	return offset, nil
}
