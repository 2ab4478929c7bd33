package group

import "github.com/strata-broker/strata/broker/coordkey"

// TopicName is Kafka's internal topic holding committed offsets and group
// metadata.
const TopicName = "__consumer_offsets"

// PartitionFor is the __consumer_offsets partition whose leader coordinates
// group, as Kafka computes it (coordkey.PartitionFor: the function Kafka
// also uses for __transaction_state). It returns 0 when n ≤ 0.
func PartitionFor(group string, n int32) int32 { return coordkey.PartitionFor(group, n) }
