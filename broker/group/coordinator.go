package group

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-broker/strata/broker/coordlog"
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
// of the __consumer_offsets partitions this broker leads.
type Coordinator struct {
	cfg Config
	log *slog.Logger

	topics atomic.Pointer[func() []TopicInfo] // topic metadata for KIP-848 assignors

	mu            sync.RWMutex
	closed        bool
	numPartitions int32 // partitions of __consumer_offsets; 0 while it does not exist
	shards        map[int32]*shard
}

// shard is one led __consumer_offsets partition and its groups.
type shard struct {
	index int32
	epoch int32
	log   Log
	stop  chan struct{}      // closed when the shard is resigned
	part  coordlog.Partition // appends, at epoch, until stop

	// Guarded by Coordinator.mu.
	loaded bool
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
	return &Coordinator{cfg: cfg, log: log, shards: map[int32]*shard{}}
}

// SetPartitionCount records how many partitions __consumer_offsets has
// (0: it does not exist), which decides every group's partition.
func (c *Coordinator) SetPartitionCount(n int32) {
	c.mu.Lock()
	c.numPartitions = n
	c.mu.Unlock()
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

// Elect makes this broker the coordinator of partition index at leader
// epoch epoch: the partition is loaded in the background, and its groups
// answer ErrLoadInProgress until that is done. Electing the same epoch and
// log again does nothing; a new epoch or log reloads.
func (c *Coordinator) Elect(index, epoch int32, l Log) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	old := c.shards[index]
	if old != nil && old.epoch == epoch && old.log == l {
		c.mu.Unlock()
		return
	}
	sh := &shard{index: index, epoch: epoch, log: l, stop: make(chan struct{}), groups: map[string]group{}}
	sh.part = coordlog.Partition{Topic: TopicName, Index: index, Epoch: epoch, Log: l, Timeout: c.cfg.CommitTimeout, Stop: sh.stop}
	c.shards[index] = sh
	c.mu.Unlock()
	if old != nil {
		c.unload(old)
	}
	c.log.Debug("loading group coordinator partition", "partition", index, "epoch", epoch)
	go c.load(sh)
}

// Resign gives up partition index: its groups are dropped from memory and
// their waiting requests answered with ErrNotCoordinator.
func (c *Coordinator) Resign(index int32) {
	c.mu.Lock()
	sh := c.shards[index]
	delete(c.shards, index)
	c.mu.Unlock()
	if sh != nil {
		c.log.Info("resigned group coordinator partition", "partition", index)
		c.unload(sh)
	}
}

// Led returns the partitions this broker coordinates and their epochs.
func (c *Coordinator) Led() map[int32]int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[int32]int32, len(c.shards))
	for i, sh := range c.shards {
		out[i] = sh.epoch
	}
	return out
}

// Loaded reports whether partition index is led here and fully loaded.
func (c *Coordinator) Loaded(index int32) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	sh := c.shards[index]
	return sh != nil && sh.loaded
}

// Close resigns every partition and refuses further requests with
// ErrCoordinatorNotAvailable. Call it before the partitions' logs close.
func (c *Coordinator) Close() error {
	c.mu.Lock()
	c.closed = true
	shards := c.shards
	c.shards = map[int32]*shard{}
	c.mu.Unlock()
	for _, sh := range shards {
		c.unload(sh)
	}
	return nil
}

// unload stops a detached shard's groups.
func (c *Coordinator) unload(sh *shard) {
	close(sh.stop)
	c.mu.Lock()
	groups := sh.groups
	sh.groups = map[string]group{}
	c.mu.Unlock()
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
func (c *Coordinator) lookup(name string, create createKind) (group, error) {
	c.mu.RLock()
	g, _, err := c.find(name)
	c.mu.RUnlock()
	if err != nil || g != nil || create == createNone {
		return g, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g, sh, err := c.find(name)
	if err != nil || g != nil {
		return g, err
	}
	if create == createConsumer {
		g = newConsumerGroup(c, sh, name)
	} else {
		g = newClassicGroup(c, sh, name)
	}
	sh.groups[name] = g
	return g, nil
}

// find locates the group's shard and the group in it. c.mu must be held.
func (c *Coordinator) find(name string) (group, *shard, error) {
	if c.closed {
		return nil, nil, ErrCoordinatorNotAvailable
	}
	if c.numPartitions <= 0 {
		return nil, nil, ErrNotCoordinator
	}
	sh := c.shards[PartitionFor(name, c.numPartitions)]
	switch {
	case sh == nil:
		return nil, nil, ErrNotCoordinator
	case !sh.loaded:
		return nil, nil, ErrLoadInProgress
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
// lock is held by the caller (lock order: group → Coordinator.mu).
func (c *Coordinator) forget(g group) {
	gc := g.core()
	c.mu.Lock()
	if gc.sh.groups[gc.name] == g {
		delete(gc.sh.groups, gc.name)
	}
	c.mu.Unlock()
}

// allGroups returns every group of the loaded shards, and whether some
// led shard is still loading.
func (c *Coordinator) allGroups() ([]group, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []group
	loading := false
	for _, sh := range c.shards {
		if !sh.loaded {
			loading = true
			continue
		}
		for _, g := range sh.groups {
			out = append(out, g)
		}
	}
	return out, loading
}
