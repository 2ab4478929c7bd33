package handler

import (
	"context"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/tier/segment"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readCommittedLevel is the isolation level of read_committed consumers
// (Fetch v4+, ListOffsets v2+).
const readCommittedLevel = 1

// fetchReadCommitted reports whether fetch r reads only committed records:
// a consumer's at isolation level read_committed. A follower's fetch
// always reads up to the log end.
func fetchReadCommitted(r *kmsg.FetchRequest) bool {
	return r.Version >= 4 && r.IsolationLevel == readCommittedLevel && fetchReplicaID(r) < 0
}

// abortedTxns is what a read_committed fetch of p from offset sends along
// with n bytes of records read at loc: the aborted transactions that
// overlap the read, so that the consumer drops their records. A hot read
// takes them from the hot log's transaction indexes (Kafka's
// LocalLog.addAbortedTransactions), up to the last stable offset taken
// after the read, which no record read reaches; like Kafka's upper bound,
// it may name a transaction past the last batch read, which clients
// ignore. A cold read takes them from the remote copies' transaction
// indexes (partition.ColdAbortedTxns). Empty, not null, for a
// read_committed fetch, as Kafka answers.
func abortedTxns(ctx context.Context, p *partition.Partition, loc partition.Location, offset, n int64) ([]kmsg.FetchResponseTopicPartitionAbortedTransaction, error) {
	out := []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	if n == 0 {
		return out, nil
	}
	var aborted []segment.AbortedTxn
	if loc.Cold() {
		var err error
		if aborted, err = p.ColdAbortedTxns(ctx, loc, offset); err != nil {
			return nil, err
		}
	} else {
		aborted = p.AbortedTxns(offset, p.LastStableOffset()).Aborted
	}
	for _, a := range aborted {
		t := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		t.ProducerID, t.FirstOffset = a.ProducerID, a.FirstOffset
		out = append(out, t)
	}
	return out, nil
}

// lastStableOffset is p's last stable offset for high watermark hw, as a
// fetch answers it alongside hw.
func lastStableOffset(p *partition.Partition, hw int64) int64 {
	return p.Log().LastStableOffset(hw)
}
