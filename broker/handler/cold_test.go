package handler

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/broker/wire"
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

// TestColdFetchAnswersAtOnce: a fetch reading the tier answers once the
// read is done, whatever min.bytes asks (Kafka's DelayedRemoteFetch): a
// remote copy never grows, so waiting could add nothing. A hot fetch at
// the high watermark of the same partition still waits out max wait.
func TestColdFetchAnswersAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store, err := localdir.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		var parts *partition.Manager
		src := func() []remote.PartitionInfo {
			var out []remote.PartitionInfo
			for _, p := range parts.All() {
				out = append(out, p.RemoteInfo())
			}
			return out
		}
		rm, err := remote.New(store, memstore.New(), src,
			remote.Options{Interval: time.Hour, CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rm.Close() })
		env := testEnv(t, map[string]string{"remote.log.storage.system.enable": "true"}, func(m *partition.Manager) {
			parts = m
			m.SetTier(rm.Reader())
		})
		// One batch per segment, stamped now (remote retention would
		// drop older ones); local copies go once tiered.
		one := record.NewBatch(record.BuildOptions{FirstTimestamp: time.Now().UnixMilli()}, record.Record{Value: []byte(bigValue)})
		env.Cache.Apply(1, []metadata.Change{
			{Kind: metadata.ChangeTopic, Topic: "t", ID: metadata.NewTopicID(), Configs: map[string]string{
				"remote.storage.enable": "true", "local.retention.bytes": "1", "segment.bytes": fmt.Sprint(len(one) * 3 / 2)}},
			{Kind: metadata.ChangePartition, Topic: "t", Partition: 0,
				State: metadata.PartitionState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}, LeaderEpoch: 1}},
		})
		if err := env.Partitions.Sync(); err != nil {
			t.Fatal(err)
		}
		p, _ := env.Partitions.Get("t", 0)
		for range 4 {
			if _, err := p.AppendAsLeader(1, []record.Batch{slices.Clone(one)}, 1); err != nil {
				t.Fatal(err)
			}
		}
		rm.RunOnce(context.Background())
		if end, _ := p.TieredEndOffset(); end != 2 || p.LocalLogStartOffset() != 3 {
			t.Fatalf("tiered up to %d, local log start %d; want 2 and 3", end, p.LocalLogStartOffset())
		}

		for _, c := range []struct {
			offset int64
			want   []int64
			took   time.Duration
		}{
			{0, []int64{0}, 0},
			{2, []int64{2}, 0},
			{4, nil, fetchWait},
		} {
			req := kmsg.NewPtrFetchRequest()
			req.SetVersion(12)
			req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, int32(fetchWait.Milliseconds()), 1<<20, 1<<20
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = c.offset, 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			start := time.Now()
			res, err := handleFetch(context.Background(), env, &Request{Body: req})
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			f, err := wire.EncodeResponse(1, res.Resp, res.Marker, res.Regions)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := decodeFrame(req, f)
			if err != nil {
				t.Fatal(err)
			}
			sp := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
			got, _ := mustRecords(t, sp.RecordBatches)
			if sp.ErrorCode != 0 || !slices.Equal(got, c.want) || took != c.took {
				t.Errorf("fetch at %d: error %d, offsets %v after %v; want offsets %v after %v", c.offset, sp.ErrorCode, got, took, c.want, c.took)
			}
		}
	})
}
