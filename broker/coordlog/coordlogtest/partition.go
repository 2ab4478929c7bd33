package coordlogtest

import (
	"log/slog"
	"testing"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
)

// Internal is partition 0 of a one-broker internal topic (a coordinator's
// __consumer_offsets or __transaction_state), served by a real partition
// manager over a metadata cache the test moves.
type Internal struct {
	t      testing.TB
	Config *config.Broker
	Cache  *metadata.Cache
	Parts  *partition.Manager
	topic  string
	id     [16]byte
}

// NewInternal serves topic's partition 0 on broker 1 at leader epoch 1
// (cache revision 1); the manager closes when the test ends.
func NewInternal(t testing.TB, topic string) *Internal {
	t.Helper()
	cfg, err := config.Parse(map[string]string{"log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cache := metadata.NewCache()
	parts, err := partition.NewManager(config.NewLive(cfg), cache, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parts.Close() })
	in := &Internal{t: t, Config: cfg, Cache: cache, Parts: parts, topic: topic, id: metadata.NewTopicID()}
	in.SetEpoch(1, 1)
	return in
}

// SetEpoch makes broker 1 the leader at epoch, at cache revision rev, and
// applies it to the partition.
func (in *Internal) SetEpoch(rev int64, epoch int32) {
	in.t.Helper()
	in.Cache.Apply(rev, []metadata.Change{
		{Kind: metadata.ChangeTopic, Topic: in.topic, ID: in.id},
		{Kind: metadata.ChangePartition, Topic: in.topic, Partition: 0,
			State: metadata.PartitionState{Replicas: []int32{1}, Leader: 1, ISR: []int32{1}, LeaderEpoch: epoch}},
	})
	if err := in.Parts.Sync(); err != nil {
		in.t.Fatal(err)
	}
}

// Partition is the served partition.
func (in *Internal) Partition() *partition.Partition {
	in.t.Helper()
	p, ok := in.Parts.Get(in.topic, 0)
	if !ok {
		in.t.Fatal("partition not opened")
	}
	return p
}
