package group

import (
	"errors"
	"fmt"
	"github.com/strata-broker/strata/broker/coordshard"
	"sync"
	"time"

	"github.com/strata-broker/strata/tier/record"
)

// Protocol is one assignment protocol a member supports, with its opaque
// metadata (for "consumer" groups, the subscription).
type Protocol struct {
	Name     string
	Metadata []byte
}

// TopicPartition names a partition whose offset a group commits.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Offset is a committed offset.
type Offset struct {
	Offset          int64
	LeaderEpoch     int32 // -1: unknown
	Metadata        string
	CommitTimestamp int64 // ms; a commit without one (≤ 0) is stamped with the current time
	ExpireTimestamp int64 // ms; -1: none (only commits v2-v4 with a retention time set one)
}

// group is one group as the coordinator's shards hold it, of either kind:
// a classicGroup (JoinGroup and SyncGroup; the members' leader assigns)
// or a consumerGroup (KIP-848 heartbeats; the coordinator assigns), as
// Kafka's GroupCoordinator keeps ClassicGroup and ConsumerGroup behind its
// Group interface. The offset and admin APIs see groups through it. Every
// method is called with the group's lock (groupCore.mu) held.
type group interface {
	// core is the state both kinds share.
	core() *groupCore
	// listing is the group as ListGroups shows it.
	listing() Listing
	// isEmpty reports whether the group has no member and none about to
	// join.
	isEmpty() bool
	// validateOffsetCommit checks that a commit by the member (generation:
	// its member epoch in a consumer group; memberEpochs: OffsetCommit
	// v9+) may go to the group, and restarts the member's session.
	validateOffsetCommit(memberID string, instanceID *string, generation int32, memberEpochs bool) error
	// validateTxnOffsetCommit checks a TxnOffsetCommit's member, when it
	// names one (KIP-447 fencing).
	validateTxnOffsetCommit(memberID string, instanceID *string, generation int32) error
	// validateOffsetFetch checks an OffsetFetch that names its member
	// (memberEpoch ≥ 0: OffsetFetch v9+).
	validateOffsetFetch(memberID string, memberEpoch int32) error
	// validateOffsetDelete checks that OffsetDelete may delete offsets of
	// the group's unsubscribed topics.
	validateOffsetDelete() error
	// validateDeleteGroup checks that DeleteGroups may delete the group.
	validateDeleteGroup() error
	// subscribedTopics are the topics the members consume, whose offsets
	// neither OffsetDelete nor expiry removes; nil when they are unknown.
	subscribedTopics() map[string]bool
	// offsetExpiration says whether the group's offsets expire now (ok)
	// and from when: sinceEmpty, from when the group emptied; otherwise
	// each from its commit, except those of subscribed topics (Kafka's
	// offsetExpirationCondition).
	offsetExpiration() (sinceEmpty, ok bool)
	// tombstones delete the group's metadata records from
	// __consumer_offsets.
	tombstones() []record.Record
	// startSessions starts the sessions of members restored from the log.
	startSessions()
	// drop answers the group's waiting requests with err, stops its
	// timers and marks it removed.
	drop(err error)
}

// groupCore is what groups of both kinds hold: the group id and its
// shard, the lock over all of the group's state, and the committed
// offsets.
type groupCore struct {
	c    *Coordinator
	sh   *shard
	name string

	mu        sync.Mutex
	removed   bool      // dropped from its shard (deleted, resigned or replaced); a lookup must start over
	stateTime time.Time // when the state last changed; offsets of an empty group expire from it
	offsets   map[TopicPartition]Offset
	// pendingTxn are the offsets of open transactions by producer id
	// (txn_offsets.go), invisible until their COMMIT marker.
	pendingTxn map[int64]map[TopicPartition]*pendingOffset
}

func (gc *groupCore) core() *groupCore { return gc }

func (gc *groupCore) initCore(c *Coordinator, sh *shard, name string) {
	gc.c, gc.sh, gc.name = c, sh, name
	gc.stateTime = time.Now()
	gc.offsets = map[TopicPartition]Offset{}
}

// handOver gives a group's identity, state time and offsets to the group
// of the other kind that replaces it.
func (gc *groupCore) handOver(to *groupCore) {
	to.c, to.sh, to.name = gc.c, gc.sh, gc.name
	to.stateTime, to.offsets, to.pendingTxn = gc.stateTime, gc.offsets, gc.pendingTxn
}

// createKind says which kind of group a request creates when its group
// does not exist.
type createKind int8

const (
	createNone     createKind = iota // a missing group is ErrGroupNotFound
	createClassic                    // JoinGroup without a member id, simple OffsetCommit
	createConsumer                   // ConsumerGroupHeartbeat joining
)

// errReplaced tells withGroup that fn replaced the group with one of the
// other kind, on which fn is to run again.
var errReplaced = errors.New("group: replaced by a group of the other kind")

// Conversion between the kinds: an empty group takes the kind of the
// first member's protocol. A JoinGroup turns an empty consumer group into
// a classic one, after deleting its KIP-848 records; a joining
// ConsumerGroupHeartbeat turns an empty classic group into a consumer
// group. Offsets stay with the group. Groups with members are not
// converted, as in Kafka with group.consumer.migration.policy=disabled.

// classicForJoin returns g as the classic group a JoinGroup joins. An
// empty consumer group is replaced by a classic one (errReplaced); one
// with members is ErrInconsistentProtocol.
func (c *Coordinator) classicForJoin(g group) (*classicGroup, error) {
	cg, ok := g.(*consumerGroup)
	if !ok {
		return g.(*classicGroup), nil
	}
	if len(cg.members) > 0 {
		return nil, ErrInconsistentProtocol
	}
	if recs := cg.recordTombstones(); len(recs) > 0 {
		if err := cg.sh.append(recs, time.Now()); err != nil {
			return nil, err
		}
	}
	c.replace(cg, cg.toClassic())
	return nil, errReplaced
}

// consumerForHeartbeat returns g as the consumer group a
// ConsumerGroupHeartbeat is for. An empty classic group is replaced by a
// consumer group (errReplaced) when the heartbeat joins, else it is
// ErrUnknownMemberID; a classic group with members is ErrGroupNotFound,
// as in Kafka without migration between the kinds.
func (c *Coordinator) consumerForHeartbeat(g group, join bool) (*consumerGroup, error) {
	cl, ok := g.(*classicGroup)
	if !ok {
		return g.(*consumerGroup), nil
	}
	if cl.state != Empty || len(cl.members) > 0 || len(cl.pending) > 0 {
		return nil, fmt.Errorf("%w: %s is a classic group", ErrGroupNotFound, cl.name)
	}
	if !join {
		return nil, ErrUnknownMemberID
	}
	c.replace(cl, cl.toConsumer())
	return nil, errReplaced
}

// replace puts ng in old's place in its shard and drops old, so that
// requests waiting for old's lock look the group up again and find ng.
// old's lock is held (lock order group → table); ng is not shared
// yet. A shard being resigned keeps neither.
func (c *Coordinator) replace(old, ng group) {
	oc := old.core()
	c.Update(func(coordshard.Locked[*shard]) {
		if oc.sh.groups[oc.name] == old {
			oc.sh.groups[oc.name] = ng
		}
	})
	old.drop(ErrCoordinatorNotAvailable)
}
