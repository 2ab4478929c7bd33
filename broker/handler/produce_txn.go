package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/broker/txn"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
)

// txnAppend is a partition of a produce whose transactional batch waits
// for the transaction coordinator (KIP-890): the partition, the leader
// epoch checked, the batch, and where its answer is in the response.
type txnAppend struct {
	p           *partition.Partition
	leaderEpoch int32
	batch       record.Batch
	tp          txn.TopicPartition
	topic       string
	bytes       int
	ti, pi      int
}

// producerKey is a producer id at an epoch.
type producerKey struct {
	id    int64
	epoch int16
}

// appendTxn appends the transactional batches of a produce, as Kafka's
// ReplicaManager.appendRecords does with verification: each partition
// starts a VerificationGuard for the batch's producer; the partitions
// whose guard is not verified yet go to the coordinator together
// (coordinateTxn: verified, or with opAddPartition added); those it
// refuses answer its code (produceVerifyError) and append nothing; the
// others are appended under their guard, so a transaction that ended
// meanwhile is not reopened (INVALID_TXN_STATE). It returns the appends
// an acks=all produce waits for.
func (env *Env) appendTxn(ctx context.Context, resp *kmsg.ProduceResponse, id string, txns []txnAppend, op txnOp, acks int16, now int64) []ackWait {
	guards := make([]*partition.VerificationGuard, len(txns))
	ask := map[producerKey][]txn.TopicPartition{}
	for i, a := range txns {
		k := producerKey{a.batch.ProducerID(), a.batch.ProducerEpoch()}
		var need bool
		guards[i], need = a.p.StartTxnVerification(k.id, k.epoch)
		if need {
			ask[k] = append(ask[k], a.tp)
		}
	}
	codes := map[producerKey]map[txn.TopicPartition]int16{}
	for k, tps := range ask {
		codes[k] = env.coordinateTxn(ctx, id, k.id, k.epoch, tps, op)
	}
	var waits []ackWait
	for i, a := range txns {
		sp := &resp.Topics[a.ti].Partitions[a.pi]
		pid := a.batch.ProducerID()
		if code := codes[producerKey{pid, a.batch.ProducerEpoch()}][a.tp]; code != 0 {
			a.p.AbandonTxnVerification(pid, guards[i])
			sp.ErrorCode, sp.ErrorMessage = produceVerifyError(code)
			env.Log.Debug("transactional produce refused by the coordinator", "transactional_id", id, "topic", a.topic, "partition", a.tp.Partition, "code", sp.ErrorCode)
			continue
		}
		var res local.AppendResult
		res, err := a.p.AppendVerified(a.leaderEpoch, pid, guards[i], []record.Batch{a.batch}, now)
		if env.produced(sp, a.p, a.topic, a.bytes, res, err, acks) {
			waits = append(waits, ackWait{p: a.p, until: res.LastOffset + 1, topic: a.ti, part: a.pi})
		}
	}
	return waits
}
