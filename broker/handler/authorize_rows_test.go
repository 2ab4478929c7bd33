package handler

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata/controller"
	"github.com/strata-broker/strata/tier/record"
)

// authRows are TestAuthorization's rows: Kafka's operation table
// (KafkaApis), one row or more per API.
func authRows() []authRow {
	topic := withTopic("t", 1, nil)
	groups := sceneOpts{groups: true}
	txnTopic := steps(withTxnCoordinator, topic)
	req := func(r kmsg.Request) func(*testing.T, *scene) kmsg.Request {
		return func(*testing.T, *scene) kmsg.Request { return r }
	}
	var rows []authRow
	rows = append(rows, dataRows(topic)...)
	rows = append(rows, authMetadataRows(topic)...)
	rows = append(rows, groupRows(topic, groups)...)
	rows = append(rows, txnRows(topic, txnTopic)...)
	rows = append(rows, adminRows(topic)...)
	rows = append(rows,
		authRow{key: kmsg.ApiVersions, req: req(kmsg.NewPtrApiVersionsRequest())},
		authRow{key: kmsg.SASLHandshake, req: req(&kmsg.SASLHandshakeRequest{Mechanism: "PLAIN"})},
		authRow{key: kmsg.SASLAuthenticate, req: req(kmsg.NewPtrSASLAuthenticateRequest())},
	)
	return rows
}

// dataRows: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch,
// DeleteRecords, DescribeProducers.
func dataRows(topic step) []authRow {
	produce := func(b record.Batch, txnID *string) func(*testing.T, *scene) kmsg.Request {
		return func(_ *testing.T, s *scene) kmsg.Request {
			r := produceReq(s, 1, "t", 0, slices.Clone(b))
			r.TransactionID = txnID
			return r
		}
	}
	txnBatch := batchWith(record.BuildOptions{Transactional: true, Idempotent: true, ProducerID: 1}, "a")
	fetch := func(opts ...fetchArg) func(*testing.T, *scene) kmsg.Request {
		return func(_ *testing.T, s *scene) kmsg.Request {
			return fetchReq(s, append([]fetchArg{fetchAt{"t", 0, 0}}, opts...)...)
		}
	}
	listOffsets := func(*testing.T, *scene) kmsg.Request {
		r := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = latestTimestamp
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
	epochs := func(replica int32) func(*testing.T, *scene) kmsg.Request {
		return func(*testing.T, *scene) kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = replica
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
			return r
		}
	}
	return []authRow{
		{key: kmsg.Produce, name: "by name", version: 12, setup: topic, req: produce(batch("a"), nil),
			needs: []need{topicNeed(aclWrite, "t", topicDenied)}},
		{key: kmsg.Produce, name: "by id", setup: topic, req: produce(batch("a"), nil),
			needs: []need{topicNeed(aclWrite, "t", topicDenied)}},
		{key: kmsg.Produce, name: "transactional", scene: txnScene, setup: steps(withTxnCoordinator, topic),
			req:   produce(txnBatch, kmsg.StringPtr("tx")),
			needs: []need{topicNeed(aclWrite, "t", topicDenied), txnNeed(aclWrite, "tx", txnDenied)}},
		{key: kmsg.Fetch, name: "by name", version: 12, setup: topic, req: fetch(),
			needs: []need{topicNeed(aclRead, "t", topicDenied)}},
		{key: kmsg.Fetch, name: "by id", setup: topic, req: fetch(),
			needs: []need{topicNeed(aclRead, "t", topicDenied)}},
		{key: kmsg.Fetch, name: "follower", setup: topic, req: fetch(asReplica(2)),
			needs: []need{clusterNeed(aclClusterAction, topicDenied)}},
		{key: kmsg.ListOffsets, setup: topic, req: listOffsets,
			needs: []need{topicNeed(aclDescribe, "t", topicDenied)}},
		{key: kmsg.OffsetForLeaderEpoch, setup: topic, req: epochs(-1),
			needs: []need{topicNeed(aclDescribe, "t", topicDenied)}},
		{key: kmsg.OffsetForLeaderEpoch, name: "follower", setup: topic, req: epochs(2),
			needs: []need{clusterNeed(aclClusterAction, clusterDenied)}},
		{key: kmsg.DeleteRecords, setup: topic, req: func(*testing.T, *scene) kmsg.Request { return deleteRecordsReq("t", 0, 0) },
			needs: []need{topicNeed(aclDelete, "t", topicDenied)}},
		{key: kmsg.DescribeProducers, setup: topic, req: describeProducersReq("t", 0),
			needs: []need{topicNeed(aclRead, "t", topicDenied)}},
	}
}

// authMetadataRows: Metadata's filtering, auto-creation and authorized
// operations.
func authMetadataRows(topic step) []authRow {
	named := func(name string, autoCreate bool) func(*testing.T, *scene) kmsg.Request {
		return func(*testing.T, *scene) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			r.Topics = append(r.Topics, rt)
			r.AllowAutoTopicCreation, r.IncludeTopicAuthorizedOperations = autoCreate, true
			return r
		}
	}
	byID := func(_ *testing.T, s *scene) kmsg.Request {
		r := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = s.topicID("t")
		r.Topics = append(r.Topics, rt)
		return r
	}
	all := func(*testing.T, *scene) kmsg.Request {
		r := kmsg.NewPtrMetadataRequest()
		r.IncludeClusterAuthorizedOperations = true // v8-10
		return r
	}
	listed := func(t *testing.T, r *kmsg.MetadataResponse) []string {
		var names []string
		for _, mt := range r.Topics {
			names = append(names, *mt.Topic)
		}
		return names
	}
	return []authRow{
		{key: kmsg.Metadata, name: "named", setup: topic, req: named("t", false),
			needs: []need{topicNeed(aclDescribe, "t", topicDenied)},
			allowed: want(func(t *testing.T, r *kmsg.MetadataResponse) {
				if ops := r.Topics[0].AuthorizedOperations; ops != 1<<aclDescribe {
					t.Errorf("topic authorized operations %b, want DESCRIBE only", ops)
				}
			})},
		{key: kmsg.Metadata, name: "unknown, not told", req: named("nope", false),
			needs: []need{topicNeed(aclDescribe, "nope", topicDenied)}},
		{key: kmsg.Metadata, name: "by id", setup: topic, req: byID,
			needs: []need{topicNeed(aclDescribe, "t", topicDenied)}},
		{key: kmsg.Metadata, name: "all topics", setup: topic, req: all,
			needs: []need{topicNeed(aclDescribe, "t", 0)},
			allowed: want(func(t *testing.T, r *kmsg.MetadataResponse) {
				if got := listed(t, r); !slices.Equal(got, []string{"t"}) {
					t.Errorf("listed %v, want [t]", got)
				}
			}),
			denied: want(func(t *testing.T, r *kmsg.MetadataResponse) {
				if got := listed(t, r); len(got) > 0 {
					t.Errorf("listed %v, want none", got)
				}
			})},
		{key: kmsg.Metadata, name: "cluster operations", version: 10, req: all,
			needs: []need{clusterNeed(aclDescribe, 0)},
			allowed: want(func(t *testing.T, r *kmsg.MetadataResponse) {
				if r.AuthorizedOperations != 1<<aclDescribe {
					t.Errorf("cluster authorized operations %b, want DESCRIBE only", r.AuthorizedOperations)
				}
			}),
			denied: want(func(t *testing.T, r *kmsg.MetadataResponse) {
				if r.AuthorizedOperations != 0 {
					t.Errorf("cluster authorized operations %b, want none", r.AuthorizedOperations)
				}
			})},
		{key: kmsg.Metadata, name: "auto-create by the cluster", req: named("n", true),
			needs: []need{topicNeed(aclDescribe, "n", topicDenied), clusterNeed(aclCreate, topicDenied)}},
		{key: kmsg.Metadata, name: "auto-create by the topic", req: named("n", true),
			needs: []need{topicNeed(aclDescribe, "n", topicDenied), topicNeed(aclCreate, "n", topicDenied)}},
	}
}

// groupRows: the group APIs, classic and KIP-848.
func groupRows(topic step, groups sceneOpts) []authRow {
	commit := func(*testing.T, *scene) kmsg.Request {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group, r.Generation, r.MemberID = "g", -1, ""
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
	offsetFetch := func(*testing.T, *scene) kmsg.Request {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Group = "g"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0}
		r.Topics = append(r.Topics, rt)
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = "g"
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.Partitions = "t", []int32{0}
		rg.Topics = append(rg.Topics, gt)
		r.Groups = append(r.Groups, rg)
		return r
	}
	g := func(build func() kmsg.Request) func(*testing.T, *scene) kmsg.Request {
		return func(*testing.T, *scene) kmsg.Request { return build() }
	}
	listedG := func(present bool) func(*testing.T, kmsg.Response) {
		return want(func(t *testing.T, r *kmsg.ListGroupsResponse) {
			has := slices.ContainsFunc(r.Groups, func(sg kmsg.ListGroupsResponseGroup) bool { return sg.Group == "g" })
			if has != present {
				t.Errorf("group g listed: %v, want %v (%+v)", has, present, r.Groups)
			}
		})
	}
	withGroup := steps(topic, stable(1))
	withOffsets := steps(topic, func(t *testing.T, s *scene) {
		if codes := authCodes(s.do(t, commit(t, s))); len(codes) > 0 {
			t.Fatalf("commit: %v", codeNames(codes))
		}
	})
	readG, describeG := groupNeed(aclRead, "g", groupDenied), groupNeed(aclDescribe, "g", groupDenied)
	return []authRow{
		{key: kmsg.OffsetCommit, scene: groups, setup: topic, req: commit,
			needs: []need{readG, topicNeed(aclRead, "t", topicDenied)}},
		{key: kmsg.OffsetFetch, scene: groups, setup: topic, req: offsetFetch,
			needs: []need{describeG, topicNeed(aclDescribe, "t", topicDenied)}},
		{key: kmsg.OffsetFetch, name: "v7", version: 7, scene: groups, setup: topic, req: offsetFetch,
			needs: []need{describeG, topicNeed(aclDescribe, "t", topicDenied)}},
		{key: kmsg.FindCoordinator, name: "group", req: findReq(0, "g"), needs: []need{describeG}},
		{key: kmsg.FindCoordinator, name: "transactional id", scene: txnScene, req: findReq(1, "tx"),
			needs: []need{txnNeed(aclDescribe, "tx", txnDenied)}},
		{key: kmsg.JoinGroup, scene: groups, req: g(func() kmsg.Request { return joinRequest("g", "", nil) }), needs: []need{readG}},
		{key: kmsg.Heartbeat, scene: groups, req: g(func() kmsg.Request {
			return &kmsg.HeartbeatRequest{Group: "g", MemberID: "m", Generation: 1}
		}), needs: []need{readG}},
		{key: kmsg.LeaveGroup, scene: groups, req: g(func() kmsg.Request {
			return &kmsg.LeaveGroupRequest{Group: "g", MemberID: "m", Members: []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}}
		}), needs: []need{readG}},
		{key: kmsg.SyncGroup, scene: groups, req: g(func() kmsg.Request {
			return &kmsg.SyncGroupRequest{Group: "g", MemberID: "m", Generation: 1,
				ProtocolType: kmsg.StringPtr("consumer"), Protocol: kmsg.StringPtr("range")}
		}), needs: []need{readG}},
		{key: kmsg.DescribeGroups, scene: groups, setup: withGroup, req: describeGroupsReq(),
			needs: []need{describeG},
			allowed: want(func(t *testing.T, r *kmsg.DescribeGroupsResponse) {
				if ops := r.Groups[0].AuthorizedOperations; ops != 1<<aclDescribe {
					t.Errorf("group authorized operations %b, want DESCRIBE only", ops)
				}
			})},
		{key: kmsg.ListGroups, name: "by the cluster", scene: groups, setup: withGroup, req: listGroupsReq(nil, nil),
			needs: []need{clusterNeed(aclDescribe, 0)}, allowed: listedG(true), denied: listedG(false)},
		{key: kmsg.ListGroups, name: "by the group", scene: groups, setup: withGroup, req: listGroupsReq(nil, nil),
			needs: []need{groupNeed(aclDescribe, "g", 0)}, allowed: listedG(true), denied: listedG(false)},
		{key: kmsg.DeleteGroups, scene: groups, req: deleteGroupsReq(), needs: []need{groupNeed(aclDelete, "g", groupDenied)}},
		{key: kmsg.OffsetDelete, scene: groups, setup: withOffsets, req: g(func() kmsg.Request {
			return &kmsg.OffsetDeleteRequest{Group: "g", Topics: []kmsg.OffsetDeleteRequestTopic{
				{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}}
		}), needs: []need{groupNeed(aclDelete, "g", groupDenied), topicNeed(aclRead, "t", topicDenied)}},
		{key: kmsg.ConsumerGroupHeartbeat, scene: groups, setup: topic, req: g(func() kmsg.Request {
			return cgJoinRequest("g", "m1", nil)
		}), needs: []need{readG, topicNeed(aclDescribe, "t", topicDenied)}},
		{key: kmsg.ConsumerGroupDescribe, scene: groups, req: cgDescribeReq(), needs: []need{describeG}},
	}
}

// txnRows: the transaction APIs.
func txnRows(topic, txnTopic step) []authRow {
	writeTx := txnNeed(aclWrite, "tx", txnDenied)
	r := func(build func() kmsg.Request) func(*testing.T, *scene) kmsg.Request {
		return func(*testing.T, *scene) kmsg.Request { return build() }
	}
	addTopics := []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t", Partitions: []int32{0}}}
	initIdempotent := r(func() kmsg.Request { return kmsg.NewPtrInitProducerIDRequest() })
	return []authRow{
		{key: kmsg.InitProducerID, name: "transactional", scene: txnScene, setup: withTxnCoordinator, req: initTxnReq("tx"),
			needs: []need{writeTx}},
		{key: kmsg.InitProducerID, name: "idempotent by the cluster", req: initIdempotent,
			needs: []need{clusterNeed(aclIdempotentWrite, clusterDenied)}},
		{key: kmsg.InitProducerID, name: "idempotent by any topic", req: initIdempotent,
			needs: []need{topicNeed(aclWrite, "t", clusterDenied)}},
		{key: kmsg.AddPartitionsToTxn, name: "client", version: 3, scene: txnScene, setup: txnTopic, req: r(func() kmsg.Request {
			return &kmsg.AddPartitionsToTxnRequest{TransactionalID: "tx", ProducerID: 1, Topics: []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}}
		}), needs: []need{writeTx, topicNeed(aclWrite, "t", topicDenied)}},
		{key: kmsg.AddPartitionsToTxn, name: "broker", scene: txnScene, setup: txnTopic, req: r(func() kmsg.Request {
			return &kmsg.AddPartitionsToTxnRequest{Transactions: []kmsg.AddPartitionsToTxnRequestTransaction{
				{TransactionalID: "tx", ProducerID: 1, VerifyOnly: true, Topics: addTopics}}}
		}), needs: []need{clusterNeed(aclClusterAction, clusterDenied)}},
		{key: kmsg.AddOffsetsToTxn, scene: txnScene, setup: withTxnCoordinator, req: r(func() kmsg.Request {
			return &kmsg.AddOffsetsToTxnRequest{TransactionalID: "tx", ProducerID: 1, Group: "g"}
		}), needs: []need{writeTx, groupNeed(aclRead, "g", groupDenied)}},
		{key: kmsg.EndTxn, scene: txnScene, setup: withTxnCoordinator, req: r(func() kmsg.Request {
			return &kmsg.EndTxnRequest{TransactionalID: "tx", ProducerID: 1, Commit: true}
		}), needs: []need{writeTx}},
		{key: kmsg.WriteTxnMarkers, setup: topic, req: r(func() kmsg.Request {
			return &kmsg.WriteTxnMarkersRequest{Markers: []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 1, Committed: true,
				Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t", Partitions: []int32{0}}}}}}
		}), needs: []need{clusterNeed(aclClusterAction, clusterDenied)}},
		{key: kmsg.TxnOffsetCommit, scene: sceneOpts{groups: true, config: txnScene.config}, setup: txnTopic, req: r(func() kmsg.Request {
			return &kmsg.TxnOffsetCommitRequest{TransactionalID: "tx", Group: "g", ProducerID: 1, Generation: -1,
				Topics: []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}}
		}), needs: []need{writeTx, groupNeed(aclRead, "g", groupDenied), topicNeed(aclRead, "t", topicDenied)}},
		{key: kmsg.DescribeTransactions, scene: txnScene, setup: withTxnCoordinator, req: r(func() kmsg.Request {
			return &kmsg.DescribeTransactionsRequest{TransactionalIDs: []string{"tx"}}
		}), needs: []need{txnNeed(aclDescribe, "tx", txnDenied)}},
		{key: kmsg.ListTransactions, scene: txnScene,
			setup: func(t *testing.T, s *scene) { withTxnCoordinator(t, s); initTxn(t, s, "tx") },
			req:   r(func() kmsg.Request { return kmsg.NewPtrListTransactionsRequest() }),
			needs: []need{txnNeed(aclDescribe, "tx", 0)},
			allowed: want(func(t *testing.T, r *kmsg.ListTransactionsResponse) {
				if len(r.TransactionStates) != 1 {
					t.Errorf("listed %+v, want tx", r.TransactionStates)
				}
			}),
			denied: want(func(t *testing.T, r *kmsg.ListTransactionsResponse) {
				if len(r.TransactionStates) != 0 {
					t.Errorf("listed %+v, want none", r.TransactionStates)
				}
			})},
	}
}

// adminRows: topics, configs, partitions, the cluster and credentials.
func adminRows(topic step) []authRow {
	r := func(build func() kmsg.Request) func(*testing.T, *scene) kmsg.Request {
		return func(*testing.T, *scene) kmsg.Request { return build() }
	}
	create := r(func() kmsg.Request {
		return &kmsg.CreateTopicsRequest{TimeoutMillis: 5000, Topics: []kmsg.CreateTopicsRequestTopic{{Topic: "n", NumPartitions: 1, ReplicationFactor: 1}}}
	})
	deleteByID := func(_ *testing.T, s *scene) kmsg.Request {
		return &kmsg.DeleteTopicsRequest{Topics: []kmsg.DeleteTopicsRequestTopic{{TopicID: s.topicID("t")}}}
	}
	ops := func(bits int32) func(*testing.T, kmsg.Response) {
		return want(func(t *testing.T, r *kmsg.DescribeClusterResponse) {
			if r.ClusterAuthorizedOperations != bits {
				t.Errorf("cluster authorized operations %b, want %b", r.ClusterAuthorizedOperations, bits)
			}
		})
	}
	alterCluster, describeCluster := clusterNeed(aclAlter, clusterDenied), clusterNeed(aclDescribe, clusterDenied)
	return []authRow{
		{key: kmsg.CreateTopics, name: "by the cluster", req: create,
			needs: []need{clusterNeed(aclCreate, topicDenied), topicNeed(aclDescribeConfigs, "n", topicDenied)}},
		{key: kmsg.CreateTopics, name: "by the topic", req: create,
			needs: []need{topicNeed(aclCreate, "n", topicDenied), topicNeed(aclDescribeConfigs, "n", topicDenied)}},
		{key: kmsg.DeleteTopics, name: "by name", setup: topic, req: r(func() kmsg.Request {
			return &kmsg.DeleteTopicsRequest{TopicNames: []string{"t"}, Topics: []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("t")}}}
		}), needs: []need{topicNeed(aclDelete, "t", topicDenied)}},
		{key: kmsg.DeleteTopics, name: "by id", setup: topic, req: deleteByID,
			needs: []need{topicNeed(aclDelete, "t", topicDenied)}},
		{key: kmsg.CreatePartitions, setup: topic, req: r(func() kmsg.Request {
			return &kmsg.CreatePartitionsRequest{TimeoutMillis: 5000, Topics: []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 2}}}
		}), needs: []need{topicNeed(aclAlter, "t", topicDenied)}},
		{key: kmsg.DescribeConfigs, name: "topic", setup: topic, req: describeReq(resourceTopic, "t"),
			needs: []need{topicNeed(aclDescribeConfigs, "t", topicDenied)}},
		{key: kmsg.DescribeConfigs, name: "broker", req: describeReq(resourceBroker, "1"),
			needs: []need{clusterNeed(aclDescribeConfigs, clusterDenied)}},
		{key: kmsg.AlterConfigs, name: "topic", setup: topic, req: alterReq(true, resourceTopic, "t", "retention.ms", "1000"),
			needs: []need{topicNeed(aclAlterConfigs, "t", topicDenied)}},
		{key: kmsg.AlterConfigs, name: "broker", req: alterReq(true, resourceBroker, "1"),
			needs: []need{clusterNeed(aclAlterConfigs, clusterDenied)}},
		{key: kmsg.IncrementalAlterConfigs, name: "topic", setup: topic,
			req:   incrementalReq(true, resourceTopic, "t", configOp{kmsg.IncrementalAlterConfigOpSet, "retention.ms", "1000"}),
			needs: []need{topicNeed(aclAlterConfigs, "t", topicDenied)}},
		{key: kmsg.IncrementalAlterConfigs, name: "broker",
			req:   incrementalReq(true, resourceBroker, "1", configOp{kmsg.IncrementalAlterConfigOpSet, "log.retention.ms", "1000"}),
			needs: []need{clusterNeed(aclAlterConfigs, clusterDenied)}},
		{key: kmsg.DescribeLogDirs, req: r(func() kmsg.Request { return kmsg.NewPtrDescribeLogDirsRequest() }), needs: []need{describeCluster}},
		{key: kmsg.ElectLeaders, setup: topic, req: r(func() kmsg.Request {
			return electReq(2, controller.ElectPreferred, 100*time.Millisecond, map[string][]int32{"t": {0}})
		}), needs: []need{alterCluster}},
		{key: kmsg.AlterPartitionAssignments, setup: topic, req: r(func() kmsg.Request {
			return &kmsg.AlterPartitionAssignmentsRequest{TimeoutMillis: 5000, Topics: []kmsg.AlterPartitionAssignmentsRequestTopic{
				{Topic: "t", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{1}}}}}}
		}), needs: []need{alterCluster}},
		{key: kmsg.ListPartitionReassignments, req: r(func() kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() }),
			needs: []need{describeCluster}},
		{key: kmsg.DescribeUserSCRAMCredentials, req: r(func() kmsg.Request { return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest() }),
			needs: []need{describeCluster}},
		{key: kmsg.AlterUserSCRAMCredentials, req: r(func() kmsg.Request {
			return &kmsg.AlterUserSCRAMCredentialsRequest{Deletions: []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "u", Mechanism: 1}}}
		}), needs: []need{alterCluster}},
		{key: kmsg.DescribeACLs, req: r(func() kmsg.Request {
			return &kmsg.DescribeACLsRequest{ResourceType: kmsg.ACLResourceTypeAny, ResourcePatternType: kmsg.ACLResourcePatternTypeAny,
				Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny}
		}), needs: []need{describeCluster}},
		{key: kmsg.CreateACLs, req: r(func() kmsg.Request {
			return &kmsg.CreateACLsRequest{Creations: []kmsg.CreateACLsRequestCreation{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t",
				ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: "User:x", Host: "*",
				Operation: kmsg.ACLOperationRead, PermissionType: kmsg.ACLPermissionTypeAllow}}}
		}), needs: []need{alterCluster}},
		{key: kmsg.DeleteACLs, req: r(func() kmsg.Request {
			return &kmsg.DeleteACLsRequest{Filters: []kmsg.DeleteACLsRequestFilter{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: kmsg.StringPtr("t"),
				ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny}}}
		}), needs: []need{alterCluster}},
		{key: kmsg.DescribeClientQuotas, req: r(func() kmsg.Request { return kmsg.NewPtrDescribeClientQuotasRequest() }),
			needs: []need{clusterNeed(aclDescribeConfigs, clusterDenied)}},
		{key: kmsg.AlterClientQuotas, req: r(func() kmsg.Request {
			return &kmsg.AlterClientQuotasRequest{ValidateOnly: true, Entries: []kmsg.AlterClientQuotasRequestEntry{{
				Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("u")}},
				Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1024}}}}}
		}), needs: []need{clusterNeed(aclAlterConfigs, clusterDenied)}},
		{key: kmsg.DescribeCluster, req: r(func() kmsg.Request {
			return &kmsg.DescribeClusterRequest{IncludeClusterAuthorizedOperations: true, EndpointType: 1}
		}), needs: []need{clusterNeed(aclDescribe, 0)}, allowed: ops(1 << aclDescribe), denied: ops(0)},
	}
}
