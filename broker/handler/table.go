package handler

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// API is one registered Kafka API.
type API struct {
	Key      int16
	Min, Max int16
	Fn       Func
	// Async handlers may block (long-poll) and run off the connection's
	// reading goroutine.
	Async bool
}

// table is the one registration table: ApiVersions is derived from it.
var table = map[int16]API{}

func init() {
	for _, a := range []API{
		{Key: 0, Min: 3, Max: 13, Fn: handleProduce},
		{Key: 1, Min: 4, Max: 17, Fn: handleFetch, Async: true},
		{Key: 2, Min: 0, Max: 9, Fn: handleListOffsets},
		{Key: 3, Min: 0, Max: 12, Fn: handleMetadata},
		{Key: 8, Min: 0, Max: 9, Fn: handleOffsetCommit},
		{Key: 9, Min: 0, Max: 9, Fn: handleOffsetFetch},
		{Key: 10, Min: 0, Max: 5, Fn: handleFindCoordinator},
		{Key: 11, Min: 0, Max: 9, Fn: handleJoinGroup, Async: true},
		{Key: 12, Min: 0, Max: 4, Fn: handleHeartbeat},
		{Key: 13, Min: 0, Max: 5, Fn: handleLeaveGroup},
		{Key: 14, Min: 0, Max: 5, Fn: handleSyncGroup, Async: true},
		{Key: 15, Min: 0, Max: 5, Fn: handleDescribeGroups},
		{Key: 16, Min: 0, Max: 5, Fn: handleListGroups},
		{Key: 18, Min: 0, Max: 5, Fn: handleApiVersions},
		{Key: 19, Min: 0, Max: 7, Fn: handleCreateTopics},
		{Key: 20, Min: 0, Max: 6, Fn: handleDeleteTopics},
		{Key: 21, Min: 0, Max: 2, Fn: handleDeleteRecords},
		{Key: 22, Min: 0, Max: 5, Fn: handleInitProducerID},
		{Key: 23, Min: 0, Max: 4, Fn: handleOffsetForLeaderEpoch},
		{Key: 32, Min: 0, Max: 4, Fn: handleDescribeConfigs},
		{Key: 33, Min: 0, Max: 2, Fn: handleAlterConfigs},
		{Key: 35, Min: 0, Max: 4, Fn: handleDescribeLogDirs},
		{Key: 37, Min: 0, Max: 3, Fn: handleCreatePartitions},
		{Key: 42, Min: 0, Max: 2, Fn: handleDeleteGroups},
		{Key: 43, Min: 0, Max: 2, Fn: handleElectLeaders},
		{Key: 44, Min: 0, Max: 1, Fn: handleIncrementalAlterConfigs},
		{Key: 45, Min: 0, Max: 0, Fn: handleAlterPartitionReassignments},
		{Key: 46, Min: 0, Max: 0, Fn: handleListPartitionReassignments},
		{Key: 47, Min: 0, Max: 0, Fn: handleOffsetDelete},
		{Key: 60, Min: 0, Max: 1, Fn: handleDescribeCluster},
		{Key: 68, Min: 0, Max: 1, Fn: handleConsumerGroupHeartbeat},
		{Key: 69, Min: 0, Max: 1, Fn: handleConsumerGroupDescribe},
	} {
		table[a.Key] = a
	}
}

// Lookup returns the API registered for key.
func Lookup(key int16) (API, bool) {
	a, ok := table[key]
	return a, ok
}

// Supported reports whether key is served at version.
func Supported(key, version int16) bool {
	a, ok := table[key]
	return ok && version >= a.Min && version <= a.Max
}

// apiKeys lists the table for ApiVersions, sorted by key.
func apiKeys() []kmsg.ApiVersionsResponseApiKey {
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(table))
	for _, a := range table {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.Key, a.Min, a.Max
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ApiKey < out[j].ApiKey })
	return out
}

// Keys returns the registered API keys, sorted.
func Keys() []int16 {
	out := make([]int16, 0, len(table))
	for k := range table {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
