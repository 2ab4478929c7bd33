package handler

import (
	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// isInternalTopic reports whether name is one of Kafka's internal topics
// (Topic.isInternal): Metadata flags them and clients may not write them.
func isInternalTopic(name string) bool {
	switch name {
	case group.TopicName, "__transaction_state", "__share_group_state":
		return true
	}
	return false
}

// topicByNameOrID resolves a topic named by name (older versions) or by id
// (newer versions), as the request gives it.
func (e *Env) topicByNameOrID(name string, id [16]byte, byID bool) (metadata.Topic, bool) {
	if byID {
		return e.Cache.TopicByID(metadata.TopicID(id))
	}
	return e.Cache.Topic(name)
}

// localPartition finds a partition this broker leads, or the Kafka error
// code a client should see for it.
func (e *Env) localPartition(t metadata.Topic, ok bool, idx int32, byID bool) (*partition.Partition, int16) {
	p, _, code := e.leaderPartition(t, ok, idx, byID)
	return p, code
}

// leaderPartition is localPartition with the leader epoch the metadata
// snapshot gave the leadership at: a write carries it to the partition,
// which refuses it once that no longer holds (partition.AppendAsLeader).
func (e *Env) leaderPartition(t metadata.Topic, ok bool, idx int32, byID bool) (*partition.Partition, int32, int16) {
	if !ok {
		if byID {
			return nil, -1, kerr.UnknownTopicID.Code
		}
		return nil, -1, kerr.UnknownTopicOrPartition.Code
	}
	st, exists := t.Partitions[idx]
	if !exists {
		return nil, -1, kerr.UnknownTopicOrPartition.Code
	}
	p, here := e.Partitions.Get(t.Name, idx)
	if !here || st.Leader != e.cfg().NodeID || p.TopicID != t.ID {
		return nil, -1, kerr.NotLeaderForPartition.Code
	}
	if testHookLeaderChecked != nil {
		testHookLeaderChecked()
	}
	return p, st.LeaderEpoch, 0
}

// testHookLeaderChecked, when set (tests only), runs between a write's
// leadership check and the write.
var testHookLeaderChecked func()
