package replica

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/broker/peer"
)

// earliestLocal is ListOffsets' timestamp for the leader's local log
// start (KIP-405).
const earliestLocal = -4

// skipTiered restarts, at the leader's local log start, the logs of
// partitions whose next offset only the tier holds (the leader answered
// OFFSET_MOVED_TO_TIERED_STORAGE), as Kafka's followers do: the tier is
// read from the bucket, never copied back to this disk. Partitions whose
// answer failed are asked again next round.
//
// The producer state at that offset comes from the tier's snapshot, as
// Kafka's follower builds it from the remote segment; the leader epochs
// come with the batches fetched from there on.
func (l *loop) skipTiered(cl *peer.Conn, parts map[*partition.Partition]*follow) error {
	req := kmsg.NewPtrListOffsetsRequest()
	req.SetVersion(listOffsetsVersion)
	req.ReplicaID = l.f.opts.NodeID
	index := map[topicPartition]*partition.Partition{}
	slots := map[string]int{}
	for p, st := range parts {
		if !st.tiered {
			continue
		}
		i := topicSlot(slots, &req.Topics, p, func(p *partition.Partition) kmsg.ListOffsetsRequestTopic {
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = p.Topic
			return t
		})
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = p.Index, p.LeaderEpoch(), earliestLocal
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		index[keyOf(p)] = p
	}
	if len(req.Topics) == 0 {
		return nil
	}
	kresp, err := cl.Request(l.ctx, req)
	if err != nil {
		return fmt.Errorf("earliest local offset from leader %d: %w", l.leader, err)
	}
	for _, t := range kresp.(*kmsg.ListOffsetsResponse).Topics {
		for _, rp := range t.Partitions {
			p := index[topicPartition{t.Topic, rp.Partition}]
			if p == nil || rp.ErrorCode != 0 || rp.Offset < 0 {
				continue
			}
			if rp.Offset > p.Log().LogEndOffset() {
				if err := p.StartAtTier(l.ctx, parts[p].epoch, rp.Offset); err != nil {
					return fmt.Errorf("start %s-%d at the leader's local log start %d: %w", p.Topic, p.Index, rp.Offset, err)
				}
				l.log.Info("following from the leader's local log start; the tier holds the rest",
					"topic", p.Topic, "partition", p.Index, "offset", rp.Offset)
			}
			parts[p].tiered = false
		}
	}
	return nil
}
