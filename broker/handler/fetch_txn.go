package handler

import (
	"github.com/strata-broker/strata/broker/partition"
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
// overlap the read, from the hot log's transaction indexes, so that the
// consumer drops their records (Kafka's LocalLog.addAbortedTransactions).
// The range searched ends at the last stable offset taken after the read,
// which no record read reaches; like Kafka's upper bound, it may name a
// transaction past the last batch read, which clients ignore. A cold read
// sends none: the tier keeps no transaction index yet, so a
// read_committed consumer reading from the tier sees aborted records.
// Empty, not null, for a read_committed fetch, as Kafka answers.
func abortedTxns(p *partition.Partition, loc partition.Location, offset, n int64) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	out := []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	if n == 0 || loc.Cold() {
		return out
	}
	for _, a := range p.AbortedTxns(offset, p.LastStableOffset()).Aborted {
		t := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		t.ProducerID, t.FirstOffset = a.ProducerID, a.FirstOffset
		out = append(out, t)
	}
	return out
}

// lastStableOffset is p's last stable offset for high watermark hw, as a
// fetch answers it alongside hw.
func lastStableOffset(p *partition.Partition, hw int64) int64 {
	return p.Log().LastStableOffset(hw)
}
