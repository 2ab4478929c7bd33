package handler

import (
	"context"
	"log/slog"
	"testing"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/record"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testEnv is an Env of broker 1 over a metadata cache and a partition
// manager, with no network and no metadata store. setup, when set, runs on
// the manager before its first Sync (to connect the tier).
func testEnv(t *testing.T, brokerConf map[string]string, setup func(*partition.Manager)) *Env {
	t.Helper()
	kv := map[string]string{"log.dirs": t.TempDir()}
	for k, v := range brokerConf {
		kv[k] = v
	}
	cfg, err := config.Parse(kv)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	cache := metadata.NewCache()
	live := config.NewLive(cfg)
	parts, err := partition.NewManager(live, cache, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parts.Close() })
	if setup != nil {
		setup(parts)
	}
	return &Env{Cfg: live, Cache: cache, Partitions: parts, Log: log}
}

// setPartition puts topic t (one partition, in state st) into the cache
// at revision rev and applies it to the partitions.
func setPartition(t *testing.T, env *Env, rev int64, id metadata.TopicID, configs map[string]string, st metadata.PartitionState) {
	t.Helper()
	env.Cache.Apply(rev, []metadata.Change{
		{Kind: metadata.ChangeTopic, Topic: "t", ID: id, Configs: configs},
		{Kind: metadata.ChangePartition, Topic: "t", Partition: 0, State: st},
	})
	if err := env.Partitions.Sync(); err != nil {
		t.Fatal(err)
	}
}

func produceRequest(value string) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = 1
	req.TimeoutMillis = 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = record.NewBatch(record.BuildOptions{}, record.Record{Value: []byte(value)})
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func produce(t *testing.T, env *Env, value string) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := produceRequest(value)
	res, err := handleProduce(context.Background(), env, &Request{Body: req})
	if err != nil {
		t.Fatal(err)
	}
	return res.Resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// TestProduceFencedBetweenCheckAndAppend: leadership changes between the
// produce's leadership check and its append (a test hook flips it there).
// The append carries the epoch the check saw and is refused with
// NOT_LEADER_OR_FOLLOWER; nothing is appended, under the old epoch or
// any other.
func TestProduceFencedBetweenCheckAndAppend(t *testing.T) {
	env := testEnv(t, nil, nil)
	id := metadata.NewTopicID()
	leader := func(epoch int32) metadata.PartitionState {
		return metadata.PartitionState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1}, LeaderEpoch: epoch}
	}
	setPartition(t, env, 1, id, nil, leader(1))
	if sp := produce(t, env, "a"); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
		t.Fatalf("first produce: error %d, offset %d", sp.ErrorCode, sp.BaseOffset)
	}
	p, _ := env.Partitions.Get("t", 0)
	rev := int64(1)
	apply := func(st metadata.PartitionState) {
		rev++
		setPartition(t, env, rev, id, nil, st)
	}
	// Epochs go up with the revision.
	for _, flip := range []struct {
		name string
		to   func(epoch int32) metadata.PartitionState
	}{
		{"to follower", func(epoch int32) metadata.PartitionState {
			return metadata.PartitionState{Replicas: []int32{1, 2}, Leader: 2, ISR: []int32{1, 2}, LeaderEpoch: epoch}
		}},
		{"to leader at a newer epoch", leader},
	} {
		testHookLeaderChecked = func() { apply(flip.to(int32(rev) + 1)) }
		sp := produce(t, env, "b")
		testHookLeaderChecked = nil
		if sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.BaseOffset != -1 {
			t.Fatalf("%s between check and append: error %d, offset %d; want NOT_LEADER_OR_FOLLOWER", flip.name, sp.ErrorCode, sp.BaseOffset)
		}
		if leo := p.Log().LogEndOffset(); leo != 1 {
			t.Fatalf("%s: log end %d, want 1 (nothing appended)", flip.name, leo)
		}
		// Back to leader at a fresh epoch for the next case.
		apply(leader(int32(rev) + 1))
	}
	es := p.Log().Epochs()
	if len(es) == 0 || es[0].Epoch != 1 || es[0].StartOffset != 0 {
		t.Fatalf("epochs %+v", es)
	}
	// At the epoch the cache and the partition agree on, it is appended.
	if sp := produce(t, env, "c"); sp.ErrorCode != 0 || sp.BaseOffset != 1 {
		t.Fatalf("produce after the flips: error %d, offset %d", sp.ErrorCode, sp.BaseOffset)
	}
}

// TestDeleteRecordsFencedByLeadership: DeleteRecords moves the log start
// only as the leader at the epoch it checked; as a follower it is
// NOT_LEADER_OR_FOLLOWER and the log start stays.
func TestDeleteRecordsFencedByLeadership(t *testing.T) {
	env := testEnv(t, nil, nil)
	id := metadata.NewTopicID()
	setPartition(t, env, 1, id, nil, metadata.PartitionState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}, LeaderEpoch: 1})
	for range 3 {
		produce(t, env, "v")
	}
	del := func() kmsg.DeleteRecordsResponseTopicPartition {
		req := kmsg.NewPtrDeleteRecordsRequest()
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = 2
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		res, err := handleDeleteRecords(context.Background(), env, &Request{Body: req})
		if err != nil {
			t.Fatal(err)
		}
		return res.Resp.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
	}
	p, _ := env.Partitions.Get("t", 0)
	testHookLeaderChecked = func() {
		setPartition(t, env, 2, id, nil, metadata.PartitionState{Replicas: []int32{1, 2}, Leader: 2, ISR: []int32{1, 2}, LeaderEpoch: 2})
	}
	sp := del()
	testHookLeaderChecked = nil
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code || p.LogStartOffset() != 0 {
		t.Fatalf("delete records across a leader change: error %d, log start %d", sp.ErrorCode, p.LogStartOffset())
	}
	setPartition(t, env, 3, id, nil, metadata.PartitionState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}, LeaderEpoch: 3})
	if sp := del(); sp.ErrorCode != 0 || sp.LowWatermark != 2 {
		t.Fatalf("delete records as leader: error %d, low watermark %d", sp.ErrorCode, sp.LowWatermark)
	}
}
