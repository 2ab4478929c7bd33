package handler

import (
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// topicByNameOrID resolves a topic named by name (older versions) or by id
// (newer versions), as the request gives it.
func (e *Env) topicByNameOrID(name string, id [16]byte, byID bool) (metadata.Topic, bool) {
	if byID {
		return e.Cache.TopicByID(metadata.TopicID(id))
	}
	return e.Cache.Topic(name)
}

// localPartition finds a partition this broker serves, or the Kafka error
// code a client should see for it.
func (e *Env) localPartition(t metadata.Topic, ok bool, idx int32, byID bool) (*partition.Partition, int16) {
	if !ok {
		if byID {
			return nil, kerr.UnknownTopicID.Code
		}
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	st, exists := t.Partitions[idx]
	if !exists {
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	p, here := e.Partitions.Get(t.Name, idx)
	if !here || st.Leader != e.Cfg.NodeID || p.TopicID != t.ID {
		return nil, kerr.NotLeaderForPartition.Code
	}
	return p, 0
}
