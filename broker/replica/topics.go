package replica

import "github.com/strata-broker/strata/broker/partition"

// topicPartition keys a partition in a request's answer.
type topicPartition struct {
	topic string
	index int32
}

func keyOf(p *partition.Partition) topicPartition { return topicPartition{p.Topic, p.Index} }

// topicSlot returns where p's topic sits in a request's topic list,
// appending an entry made by mk the first time, so that the partitions of
// one topic share an entry as Kafka's requests expect.
func topicSlot[T any](slots map[string]int, topics *[]T, p *partition.Partition, mk func(*partition.Partition) T) int {
	if i, ok := slots[p.Topic]; ok {
		return i
	}
	*topics = append(*topics, mk(p))
	slots[p.Topic] = len(*topics) - 1
	return len(*topics) - 1
}
