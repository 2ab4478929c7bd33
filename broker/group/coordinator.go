package group

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/strata-broker/strata/broker/coordlog"
	"github.com/strata-broker/strata/broker/coordshard"
	"github.com/strata-broker/strata/config"
)

// newMemberJoinTimeout bounds how long a new member's parked JoinGroup
// keeps it in the group without heartbeats (Kafka's
// GroupCoordinator.NewMemberJoinTimeoutMs).
const newMemberJoinTimeout = 5 * time.Minute

// Config is the coordinator's share of the broker configuration. Take it
// from ConfigFrom: the broker's key table holds every default, and New
// uses the values as given.
type Config struct {
	InitialRebalanceDelay  time.Duration // group.initial.rebalance.delay.ms
	MinSessionTimeout      time.Duration // group.min.session.timeout.ms
	MaxSessionTimeout      time.Duration // group.max.session.timeout.ms
	MaxSize                int           // group.max.size
	OffsetsRetention       time.Duration // offsets.retention.minutes
	RetentionCheckInterval time.Duration // offsets.retention.check.interval.ms
	MaxMetadataBytes       int           // offset.metadata.max.bytes

	ConsumerSessionTimeout    time.Duration // group.consumer.session.timeout.ms
	ConsumerHeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms

	// CommitTimeout bounds the wait for a __consumer_offsets append to be
	// replicated (offsets.commit.timeout.ms).
	CommitTimeout time.Duration
}

// ConfigFrom takes the group settings of a broker configuration.
func ConfigFrom(b *config.Broker) Config {
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	return Config{
		ConsumerSessionTimeout:    ms(b.GroupConsumerSessionTimeoutMs),
		ConsumerHeartbeatInterval: ms(b.GroupConsumerHeartbeatIntervalMs),
		InitialRebalanceDelay:     ms(b.GroupInitialRebalanceDelayMs),
		MinSessionTimeout:         ms(b.GroupMinSessionTimeoutMs),
		MaxSessionTimeout:         ms(b.GroupMaxSessionTimeoutMs),
		MaxSize:                   int(b.GroupMaxSize),
		OffsetsRetention:          time.Duration(b.OffsetsRetentionMinutes) * time.Minute,
		RetentionCheckInterval:    ms(b.OffsetsRetentionCheckIntervalMs),
		MaxMetadataBytes:          int(b.OffsetMetadataMaxBytes),
		CommitTimeout:             ms(b.OffsetsCommitTimeoutMs),
	}
}

// Log is what the coordinator needs of a __consumer_offsets partition it
// leads; *partition.Partition implements it (see coordlog.Log).
type Log = coordlog.Log

// Coordinator is the group coordinator of one broker: it owns the groups
// of the __consumer_offsets partitions this broker leads. Its shard table
// (Elect, Resign, Led, Loaded, Close, SetPartitionCount) is coordshard's.
type Coordinator struct {
	*coordshard.Table[*shard]

	cfg Config
	log *slog.Logger

	topics atomic.Pointer[func() []TopicInfo] // topic metadata for KIP-848 assignors
}

// shard is one led __consumer_offsets partition and its groups.
type shard struct {
	coordshard.Shard

	// Guarded by the table's lock.
	groups map[string]group
	// txnGroups are the groups with pending offsets of each producer id
	// (Kafka's openGroupsForProducer).
	txnGroups map[int64]map[string]bool
}

// New returns a coordinator that leads no partition yet; see Elect, or Run
// to follow the metadata.
func New(cfg Config, log *slog.Logger) *Coordinator {
	if log == nil {
		log = slog.Default()
	}
	c := &Coordinator{cfg: cfg, log: log}
	c.Table = coordshard.New(coordshard.Config[*shard]{
		Topic: TopicName, Name: "group", Timeout: cfg.CommitTimeout, Log: log,
		Errors: coordshard.Errors{NotAvailable: ErrCoordinatorNotAvailable, NotCoordinator: ErrNotCoordinator, LoadInProgress: ErrLoadInProgress},
		New:    func() *shard { return &shard{groups: map[string]group{}} },
		Load:   c.load,
		Unload: c.unload,
	})
	return c
}

// SetTopics gives the coordinator the topic metadata the server-side
// assignors of KIP-848 groups assign from.
func (c *Coordinator) SetTopics(list func() []TopicInfo) { c.topics.Store(&list) }

// topicsByName returns the current topics by name.
func (c *Coordinator) topicsByName() map[string]TopicInfo {
	out := map[string]TopicInfo{}
	if f := c.topics.Load(); f != nil {
		for _, t := range (*f)() {
			out[t.Name] = t
		}
	}
	return out
}

// unload stops a resigned shard's groups.
func (c *Coordinator) unload(sh *shard) {
	var groups map[string]group
	c.Update(func(coordshard.Locked[*shard]) {
		groups = sh.groups
		sh.groups = map[string]group{}
	})
	for _, g := range groups {
		gc := g.core()
		gc.mu.Lock()
		g.drop(ErrNotCoordinator)
		gc.mu.Unlock()
	}
}

// lookup finds the named group, creating an empty one of the kind create
// says when it is missing. It returns (nil, nil) for a missing group that
// is not to be created.
func (c *Coordinator) lookup(name string, create createKind) (g group, err error) {
	c.View(func(l coordshard.Locked[*shard]) { g, _, err = find(l, name) })
	if err != nil || g != nil || create == createNone {
		return g, err
	}
	c.Update(func(l coordshard.Locked[*shard]) {
		var sh *shard
		if g, sh, err = find(l, name); err != nil || g != nil {
			return
		}
		if create == createConsumer {
			g = newConsumerGroup(c, sh, name)
		} else {
			g = newClassicGroup(c, sh, name)
		}
		sh.groups[name] = g
	})
	return g, err
}

// find locates the group's shard and the group in it. The table's lock
// is held.
func find(l coordshard.Locked[*shard], name string) (group, *shard, error) {
	sh, err := l.Find(func(n int32) int32 { return PartitionFor(name, n) })
	if err != nil {
		return nil, nil, err
	}
	return sh.groups[name], sh, nil
}

// withGroup runs fn on the named group with its lock held. A missing group
// is created as create says, else ErrGroupNotFound is returned. A group
// removed between lookup and lock, or replaced by fn with a group of the
// other kind (errReplaced), is looked up again.
func (c *Coordinator) withGroup(name string, create createKind, fn func(group) error) error {
	for range 3 {
		g, err := c.lookup(name, create)
		if err != nil {
			return err
		}
		if g == nil {
			return ErrGroupNotFound
		}
		gc := g.core()
		gc.mu.Lock()
		if gc.removed {
			gc.mu.Unlock()
			continue
		}
		err = fn(g)
		gc.mu.Unlock()
		if errors.Is(err, errReplaced) {
			continue
		}
		return err
	}
	return ErrCoordinatorNotAvailable
}

// forget removes a group that has turned Dead from its shard. The group's
// lock is held by the caller (lock order: group → table).
func (c *Coordinator) forget(g group) {
	gc := g.core()
	c.Update(func(coordshard.Locked[*shard]) {
		if gc.sh.groups[gc.name] == g {
			delete(gc.sh.groups, gc.name)
		}
	})
}

// allGroups returns every group of the loaded shards, and whether some
// led shard is still loading.
func (c *Coordinator) allGroups() ([]group, bool) {
	return coordshard.Collect(c.Table, func(sh *shard) map[string]group { return sh.groups })
}
