package partition

import (
	"github.com/strata-broker/strata/tier/segment"
)

// LastStableOffset is the partition's last stable offset (Kafka's
// UnifiedLog.lastStableOffset): the first offset of the oldest transaction
// still open or whose marker is not yet below the high watermark, else the
// high watermark. read_committed consumers read below it. A follower
// serving consumers (KIP-392) answers with its own high watermark and its
// own producer state, which replicate the leader's. Without transactions
// it is the high watermark.
func (p *Partition) LastStableOffset() int64 {
	return p.log.LastStableOffset(p.HighWatermark())
}

// ReadCommitted returns whole batches from offset on, up to the last
// stable offset, for read_committed consumers (Kafka's
// FetchIsolation.TXN_COMMITTED); otherwise as Read: an offset between the
// last stable offset and the high watermark reads nothing yet.
func (p *Partition) ReadCommitted(offset int64, maxBytes int) (segment.Slice, error) {
	return p.read(offset, maxBytes, false, true)
}

// AbortedTxns returns the aborted transactions of the local log that
// overlap the offsets [from, upTo), from the segments' transaction
// indexes, which a read_committed fetch of that range sends along so the
// consumer can drop their records. Complete is false when the local
// segments ran out before the search could end (see
// local.Log.CollectAbortedTxns).
func (p *Partition) AbortedTxns(from, upTo int64) segment.TxnIndexSearchResult {
	return p.log.CollectAbortedTxns(from, upTo)
}
