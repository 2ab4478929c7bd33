package replica

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/broker/peer"
)

// truncate finds, for partitions under a new leader epoch, the offset up
// to which this replica's log agrees with the leader's (OffsetForLeaderEpoch
// on our latest epoch) and cuts the rest, as Kafka's followers do since
// KIP-101. Partitions whose answer failed are left for the next round.
func (l *loop) truncate(cl *peer.Conn, stale []*partition.Partition, parts map[*partition.Partition]*follow) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(epochQueryVersion)
	req.ReplicaID = l.f.opts.NodeID
	type asked struct {
		p            *partition.Partition
		epoch, local int32
	}
	index := map[topicPartition]asked{}
	slots := map[string]int{}
	for _, p := range stale {
		epoch, local := p.LeaderEpoch(), p.Log().LatestEpoch()
		if local < 0 {
			// Nothing (with an epoch) to compare: keep the log as it is.
			parts[p].epoch = epoch
			continue
		}
		i := topicSlot(slots, &req.Topics, p, func(p *partition.Partition) kmsg.OffsetForLeaderEpochRequestTopic {
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = p.Topic
			return t
		})
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p.Index, epoch, local
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		index[keyOf(p)] = asked{p, epoch, local}
	}
	if len(req.Topics) == 0 {
		return nil
	}
	kresp, err := cl.Request(l.ctx, req)
	if err != nil {
		return fmt.Errorf("offset for leader epoch from leader %d: %w", l.leader, err)
	}
	for _, t := range kresp.(*kmsg.OffsetForLeaderEpochResponse).Topics {
		for _, rp := range t.Partitions {
			a, ok := index[topicPartition{t.Topic, rp.Partition}]
			if !ok || rp.ErrorCode != 0 {
				continue
			}
			to := divergence(a.p, a.local, rp.LeaderEpoch, rp.EndOffset)
			if to < a.p.Log().LogEndOffset() {
				l.log.Info("truncating divergent tail", "topic", t.Topic, "partition", rp.Partition,
					"from", a.p.Log().LogEndOffset(), "to", to, "leader_epoch", rp.LeaderEpoch)
				if err := a.p.TruncateTo(a.epoch, to); err != nil {
					return fmt.Errorf("truncate %s-%d to %d: %w", t.Topic, rp.Partition, to, err)
				}
			}
			parts[a.p].epoch = a.epoch
		}
	}
	return nil
}

// divergence is where to truncate given the leader's answer for our latest
// epoch: the leader's end of the largest common epoch, capped by our own.
func divergence(p *partition.Partition, asked, leaderEpoch int32, endOffset int64) int64 {
	leo := p.Log().LogEndOffset()
	switch {
	case leaderEpoch < 0 || endOffset < 0:
		return min(p.HighWatermark(), leo)
	case leaderEpoch < asked:
		_, localEnd := p.Log().EndOffsetForEpoch(leaderEpoch)
		if localEnd < 0 {
			return min(endOffset, leo)
		}
		return min(endOffset, localEnd)
	default:
		return min(endOffset, leo)
	}
}
