package handler

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/memstore"
	"github.com/strata-broker/strata/tier/objstore/localdir"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/remote"
	"github.com/strata-broker/strata/tier/remote/remotetest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// tieredEnv is a testEnv with a tiered topic t of two partitions led here,
// whose tier metadata is fm; each partition holds three records, the
// first two below the local log start (cold).
func tieredEnv(t *testing.T) (*Env, *remotetest.FaultMeta) {
	t.Helper()
	store, err := localdir.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fm := &remotetest.FaultMeta{RemoteSegments: memstore.New()}
	rm, err := remote.New(store, fm, func() []remote.PartitionInfo { return nil },
		remote.Options{Interval: time.Hour, CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rm.Close() })
	env := testEnv(t, map[string]string{"remote.log.storage.system.enable": "true"}, func(m *partition.Manager) { m.SetTier(rm.Reader()) })
	chs := []metadata.Change{{Kind: metadata.ChangeTopic, Topic: "t", ID: metadata.NewTopicID(), Configs: map[string]string{"remote.storage.enable": "true"}}}
	for i := range int32(2) {
		chs = append(chs, metadata.Change{Kind: metadata.ChangePartition, Topic: "t", Partition: i,
			State: metadata.PartitionState{Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1}, LeaderEpoch: 1}})
	}
	env.Cache.Apply(1, chs)
	if err := env.Partitions.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := range int32(2) {
		p, _ := env.Partitions.Get("t", i)
		for range 3 {
			if _, err := p.AppendAsLeader(1, []record.Batch{record.NewBatch(record.BuildOptions{}, record.Record{Value: []byte("v")})}, 1); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p.DeleteRecords(1, 2); err != nil {
			t.Fatal(err)
		}
	}
	return env, fm
}

// fetch fetches offset of every partition of t (replica: a follower's
// fetch) and returns the partitions' answers.
func fetch(t *testing.T, env *Env, replica int32, offsets ...int64) []kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = replica
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	for i, off := range offsets {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = int32(i), off, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	res, err := handleFetch(context.Background(), env, &Request{Body: req})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Regions {
		r.Release()
	}
	return res.Resp.(*kmsg.FetchResponse).Topics[0].Partitions
}

// TestFetchLocatesOnce: a fetch of hot offsets of a tiered topic does no
// metadata I/O; a fetch of cold offsets locates each partition once (one
// list each while the metadata cannot be loaded) and answers
// REPLICA_NOT_AVAILABLE, retriable, not OFFSET_OUT_OF_RANGE.
func TestFetchLocatesOnce(t *testing.T) {
	env, fm := tieredEnv(t)
	for _, sp := range fetch(t, env, -1, 2, 2) {
		if sp.ErrorCode != 0 {
			t.Fatalf("hot fetch of partition %d: error %d", sp.Partition, sp.ErrorCode)
		}
	}
	if n := fm.Lists.Load(); n != 0 {
		t.Fatalf("%d metadata lists during a hot fetch", n)
	}

	fm.Down.Store(true)
	for _, sp := range fetch(t, env, -1, 0, 1) {
		if sp.ErrorCode != kerr.ReplicaNotAvailable.Code {
			t.Fatalf("cold fetch of partition %d with the metadata store down: error %d, want REPLICA_NOT_AVAILABLE", sp.Partition, sp.ErrorCode)
		}
	}
	if n := fm.Lists.Load(); n != 2 {
		t.Fatalf("%d metadata lists for a fetch of two cold partitions, want 2", n)
	}
	// A follower's fetch routes by the same check.
	if sp := fetch(t, env, 2, 0)[0]; sp.ErrorCode != kerr.ReplicaNotAvailable.Code {
		t.Fatalf("follower fetch of a cold offset with the metadata store down: error %d", sp.ErrorCode)
	}

	// Reachable again, with nothing tiered: the cold offsets are out of
	// range, and hot ones are still read without I/O.
	fm.Down.Store(false)
	for _, sp := range fetch(t, env, -1, 0, 2) {
		want := int16(0)
		if sp.Partition == 0 {
			want = kerr.OffsetOutOfRange.Code
		}
		if sp.ErrorCode != want {
			t.Fatalf("fetch of partition %d: error %d, want %d", sp.Partition, sp.ErrorCode, want)
		}
	}
}
