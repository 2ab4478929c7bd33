package handler

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// API is one registered Kafka API.
type API struct {
	Key      kmsg.Key
	Min, Max int16
	Fn       Func
	// Async handlers may block (long-poll) and run off the connection's
	// reading goroutine.
	Async bool
	// ReleasesFrame says that once Fn returns, nothing refers to the
	// request's frame any more, so the connection reads its next request
	// into the same buffer. kmsg decodes byte fields (a Produce's records)
	// as views of the frame and copies strings; such a handler copies what
	// it keeps (records appended to the log, offsets committed) before it
	// returns, and its Later continuation, if any, works on the response
	// only. Never set together with Async: an async handler still runs
	// while the next request is read.
	ReleasesFrame bool
}

// table is the one registration table: ApiVersions is derived from it.
var table = map[int16]API{}

func init() {
	for _, a := range []API{
		{Key: kmsg.Produce, Min: 3, Max: 13, Fn: handleProduce, ReleasesFrame: true},
		{Key: kmsg.Fetch, Min: 4, Max: 17, Fn: handleFetch, Async: true},
		{Key: kmsg.ListOffsets, Min: 0, Max: 9, Fn: handleListOffsets},
		{Key: kmsg.Metadata, Min: 0, Max: 12, Fn: handleMetadata},
		{Key: kmsg.OffsetCommit, Min: 0, Max: 9, Fn: handleOffsetCommit, ReleasesFrame: true},
		{Key: kmsg.OffsetFetch, Min: 0, Max: 9, Fn: handleOffsetFetch},
		{Key: kmsg.FindCoordinator, Min: 0, Max: 5, Fn: handleFindCoordinator},
		{Key: kmsg.JoinGroup, Min: 0, Max: 9, Fn: handleJoinGroup, Async: true},
		{Key: kmsg.Heartbeat, Min: 0, Max: 4, Fn: handleHeartbeat},
		{Key: kmsg.LeaveGroup, Min: 0, Max: 5, Fn: handleLeaveGroup},
		{Key: kmsg.SyncGroup, Min: 0, Max: 5, Fn: handleSyncGroup, Async: true},
		{Key: kmsg.DescribeGroups, Min: 0, Max: 5, Fn: handleDescribeGroups},
		{Key: kmsg.ListGroups, Min: 0, Max: 5, Fn: handleListGroups},
		{Key: kmsg.SASLHandshake, Min: 0, Max: 1, Fn: handleSaslHandshake},
		{Key: kmsg.ApiVersions, Min: 0, Max: 5, Fn: handleApiVersions},
		{Key: kmsg.CreateTopics, Min: 0, Max: 7, Fn: handleCreateTopics},
		{Key: kmsg.DeleteTopics, Min: 0, Max: 6, Fn: handleDeleteTopics},
		{Key: kmsg.DeleteRecords, Min: 0, Max: 2, Fn: handleDeleteRecords},
		{Key: kmsg.InitProducerID, Min: 0, Max: 5, Fn: handleInitProducerID},
		{Key: kmsg.OffsetForLeaderEpoch, Min: 0, Max: 4, Fn: handleOffsetForLeaderEpoch},
		{Key: kmsg.AddPartitionsToTxn, Min: 0, Max: 5, Fn: handleAddPartitionsToTxn},
		{Key: kmsg.AddOffsetsToTxn, Min: 0, Max: 3, Fn: handleAddOffsetsToTxn},
		{Key: kmsg.EndTxn, Min: 0, Max: 5, Fn: handleEndTxn},
		{Key: kmsg.WriteTxnMarkers, Min: 0, Max: 1, Fn: handleWriteTxnMarkers},
		{Key: kmsg.TxnOffsetCommit, Min: 0, Max: 5, Fn: handleTxnOffsetCommit},
		{Key: kmsg.DescribeACLs, Min: 0, Max: 3, Fn: handleDescribeAcls},
		{Key: kmsg.CreateACLs, Min: 0, Max: 3, Fn: handleCreateAcls},
		{Key: kmsg.DeleteACLs, Min: 0, Max: 3, Fn: handleDeleteAcls},
		{Key: kmsg.SASLAuthenticate, Min: 0, Max: 2, Fn: handleSaslAuthenticate},
		{Key: kmsg.DescribeConfigs, Min: 0, Max: 4, Fn: handleDescribeConfigs},
		{Key: kmsg.AlterConfigs, Min: 0, Max: 2, Fn: handleAlterConfigs},
		{Key: kmsg.DescribeLogDirs, Min: 0, Max: 4, Fn: handleDescribeLogDirs},
		{Key: kmsg.CreatePartitions, Min: 0, Max: 3, Fn: handleCreatePartitions},
		{Key: kmsg.DeleteGroups, Min: 0, Max: 2, Fn: handleDeleteGroups},
		{Key: kmsg.ElectLeaders, Min: 0, Max: 2, Fn: handleElectLeaders},
		{Key: kmsg.IncrementalAlterConfigs, Min: 0, Max: 1, Fn: handleIncrementalAlterConfigs},
		{Key: kmsg.AlterPartitionAssignments, Min: 0, Max: 0, Fn: handleAlterPartitionReassignments},
		{Key: kmsg.ListPartitionReassignments, Min: 0, Max: 0, Fn: handleListPartitionReassignments},
		{Key: kmsg.OffsetDelete, Min: 0, Max: 0, Fn: handleOffsetDelete},
		{Key: kmsg.DescribeClientQuotas, Min: 0, Max: 1, Fn: handleDescribeClientQuotas},
		{Key: kmsg.AlterClientQuotas, Min: 0, Max: 1, Fn: handleAlterClientQuotas},
		{Key: kmsg.DescribeUserSCRAMCredentials, Min: 0, Max: 0, Fn: handleDescribeUserScramCredentials},
		{Key: kmsg.AlterUserSCRAMCredentials, Min: 0, Max: 0, Fn: handleAlterUserScramCredentials},
		{Key: kmsg.DescribeCluster, Min: 0, Max: 1, Fn: handleDescribeCluster},
		{Key: kmsg.DescribeProducers, Min: 0, Max: 0, Fn: handleDescribeProducers},
		{Key: kmsg.DescribeTransactions, Min: 0, Max: 0, Fn: handleDescribeTransactions},
		{Key: kmsg.ListTransactions, Min: 0, Max: 2, Fn: handleListTransactions},
		{Key: kmsg.ConsumerGroupHeartbeat, Min: 0, Max: 1, Fn: handleConsumerGroupHeartbeat},
		{Key: kmsg.ConsumerGroupDescribe, Min: 0, Max: 1, Fn: handleConsumerGroupDescribe},
	} {
		table[a.Key.Int16()] = a
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
		k.ApiKey, k.MinVersion, k.MaxVersion = a.Key.Int16(), a.Min, a.Max
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
