package replica

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/fetchsession"
)

// fetchTopics is the topic list of a fetch naming parts, one entry per
// topic.
func fetchTopics(parts []fetchsession.Partition) []kmsg.FetchRequestTopic {
	var topics []kmsg.FetchRequestTopic
	slots := map[string]int{}
	for _, p := range parts {
		i, ok := slots[p.Name]
		if !ok {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = p.Name
			topics = append(topics, t)
			i = len(topics) - 1
			slots[p.Name] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.LogStartOffset = p.Partition, p.FetchOffset, p.LogStartOffset
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.PartitionMaxBytes = p.CurrentLeaderEpoch, p.LastFetchedEpoch, p.MaxBytes
		topics[i].Partitions = append(topics[i].Partitions, rp)
	}
	return topics
}

// forgottenTopics is the forgotten-topics list of a fetch dropping keys
// from its session.
func forgottenTopics(keys []fetchsession.Key) []kmsg.FetchRequestForgottenTopic {
	var topics []kmsg.FetchRequestForgottenTopic
	slots := map[string]int{}
	for _, k := range keys {
		i, ok := slots[k.Topic]
		if !ok {
			t := kmsg.NewFetchRequestForgottenTopic()
			t.Topic = k.Topic
			topics = append(topics, t)
			i = len(topics) - 1
			slots[k.Topic] = i
		}
		topics[i].Partitions = append(topics[i].Partitions, k.Partition)
	}
	return topics
}

// isSessionError reports whether a fetch failed for its session alone,
// which a full fetch mends.
func isSessionError(err *kerr.Error) bool {
	return err == kerr.FetchSessionIDNotFound || err == kerr.InvalidFetchSessionEpoch || err == kerr.FetchSessionTopicIDError
}
