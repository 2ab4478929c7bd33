package group

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/tier/record"
)

// State is a classic group's state, as Kafka names it.
type State int8

// The states of a classic group (Kafka's ClassicGroupState).
const (
	Empty               State = iota // no members; offsets may remain
	PreparingRebalance               // waiting for members to (re)join
	CompletingRebalance              // joined; waiting for the leader's assignment
	Stable                           // assignment handed out
	Dead                             // removed; no longer in memory
)

// String is the state's Kafka name, as DescribeGroups and ListGroups show it.
func (s State) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	default:
		return "Dead"
	}
}

// classicGroup is a group of the classic protocol (Kafka's ClassicGroup):
// members join and sync in generations, and the leader among them assigns.
// A group that only stores offsets (simple commits) is a classic group
// with no protocol type. All fields are guarded by mu.
type classicGroup struct {
	groupCore

	state        State
	protocolType string // "" for groups that only store offsets
	protocol     string // selected protocol of the current generation
	generation   int32
	leader       string
	members      map[string]*classicMember
	static       map[string]string      // group.instance.id → member id
	pending      map[string]*time.Timer // member ids handed out with MEMBER_ID_REQUIRED
	pendingSync  map[string]struct{}    // members yet to send SyncGroup this generation

	// The join phase (PreparingRebalance): its deadline timer, a token that
	// makes stale timers harmless, and the initial-delay bookkeeping.
	joinTimer     *time.Timer
	joinSeq       uint64
	initialDelay  bool      // in group.initial.rebalance.delay
	lastArrival   time.Time // of the last member announced in the initial delay
	delayDeadline time.Time // the initial delay's bound: the rebalance timeout
	syncTimer     *time.Timer
}

// classicMember is one member of a classic group.
type classicMember struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocols        []Protocol
	assignment       []byte

	join chan JoinResult // set while a JoinGroup waits for the join phase to end
	sync chan SyncResult // set while a SyncGroup waits for the leader
	new  bool            // joined but not yet through a completed join phase

	deadline time.Time // session expiry
	timer    *time.Timer
	timerAt  time.Time
}

// failWaiting answers the member's waiting JoinGroup and SyncGroup, if
// any, with err.
func (m *classicMember) failWaiting(err error) {
	if m.join != nil {
		m.join <- joinFailed(err)
		m.join = nil
	}
	if m.sync != nil {
		m.sync <- syncFailed(err)
		m.sync = nil
	}
}

// startWaiting runs start on the named group under its lock. start gives
// a result, or a channel the result will come on (a JoinGroup or
// SyncGroup waiting for the rebalance). A missing group answers
// ErrUnknownMemberID, as the member cannot be in it; failed makes the
// answer to an error.
func startWaiting[R any](c *Coordinator, name string, create createKind, failed func(error) R, start func(group) (R, chan R, error)) (R, <-chan R) {
	var res R
	var wait chan R
	err := c.withGroup(name, create, func(gr group) error {
		var err error
		res, wait, err = start(gr)
		return err
	})
	if errors.Is(err, ErrGroupNotFound) {
		err = ErrUnknownMemberID
	}
	if err != nil {
		return failed(err), nil
	}
	if wait != nil {
		var zero R
		return zero, wait
	}
	return res, nil
}

// await is res, or, when wait is not nil, the result that comes on it;
// failed(ctx.Err()) if ctx is done first.
func await[R any](ctx context.Context, res R, wait <-chan R, failed func(error) R) R {
	if wait == nil {
		return res
	}
	select {
	case r := <-wait:
		return r
	case <-ctx.Done():
		return failed(ctx.Err())
	}
}

// newClassicGroup returns an Empty classic group.
func newClassicGroup(c *Coordinator, sh *shard, name string) *classicGroup {
	g := &classicGroup{
		state:       Empty,
		members:     map[string]*classicMember{},
		static:      map[string]string{},
		pending:     map[string]*time.Timer{},
		pendingSync: map[string]struct{}{},
	}
	g.initCore(c, sh, name)
	return g
}

// toConsumer is the empty consumer group that replaces this empty group
// (see consumerForHeartbeat); it remembers the generation, whose metadata
// record a deletion must still remove.
func (g *classicGroup) toConsumer() *consumerGroup {
	cg := newConsumerGroup(g.c, g.sh, g.name)
	g.handOver(&cg.groupCore)
	cg.classicGeneration = g.generation
	return cg
}

func (g *classicGroup) listing() Listing {
	return Listing{Group: g.name, ProtocolType: g.protocolType, State: g.state.String(), Type: "classic"}
}

// isEmpty reports whether the group is Empty with no member about to join
// with a handed-out id.
func (g *classicGroup) isEmpty() bool { return g.state == Empty && len(g.pending) == 0 }

// validateOffsetCommit takes a simple commit (generation < 0) only while
// the group is Empty; otherwise the member must be in the current
// generation and the group not waiting for its assignment.
func (g *classicGroup) validateOffsetCommit(memberID string, instanceID *string, generation int32, _ bool) error {
	if g.fenced(instanceID, memberID) {
		return ErrFencedInstanceID
	}
	if generation < 0 && g.state == Empty {
		return nil
	}
	m := g.members[memberID]
	switch {
	case m == nil:
		return ErrUnknownMemberID
	case generation != g.generation:
		return ErrIllegalGeneration
	case g.state == CompletingRebalance:
		return ErrRebalanceInProgress
	}
	g.touch(m)
	return nil
}

// validateTxnOffsetCommit fences a transactional commit as Kafka's
// doTxnCommitOffsets: a fenced static member, a named member that is not
// in the group, a generation other than the group's. The group's state
// does not matter.
func (g *classicGroup) validateTxnOffsetCommit(memberID string, instanceID *string, generation int32) error {
	switch {
	case g.fenced(instanceID, memberID):
		return ErrFencedInstanceID
	case memberID != "" && g.members[memberID] == nil:
		return ErrUnknownMemberID
	case generation >= 0 && generation != g.generation:
		return ErrIllegalGeneration
	}
	return nil
}

// validateOffsetFetch accepts every fetch: classic groups do not check
// members.
func (g *classicGroup) validateOffsetFetch(string, int32) error { return nil }

// validateOffsetDelete lets OffsetDelete into an empty group, or a
// "consumer" group whose subscriptions tell which topics it consumes.
func (g *classicGroup) validateOffsetDelete() error {
	if !g.isEmpty() && g.protocolType != "consumer" {
		return ErrNonEmptyGroup
	}
	return nil
}

func (g *classicGroup) validateDeleteGroup() error {
	if g.state != Empty {
		return ErrNonEmptyGroup
	}
	return nil
}

// subscribedTopics parses the consumer-protocol subscriptions of the
// members; nil for other protocol types or when a subscription cannot be
// parsed (then no topic counts as subscribed, as in Kafka).
func (g *classicGroup) subscribedTopics() map[string]bool {
	if g.protocolType != "consumer" {
		return nil
	}
	out := map[string]bool{}
	for _, m := range g.members {
		var s kmsg.ConsumerMemberMetadata
		if err := s.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return nil
		}
		for _, t := range s.Topics {
			out[t] = true
		}
	}
	return out
}

// offsetExpiration: offsets of an empty group expire counted from when it
// emptied; in a Stable "consumer" group with known subscriptions, those
// of other topics from their commit; in an offsets-only group, from their
// commit; otherwise not.
func (g *classicGroup) offsetExpiration() (sinceEmpty, ok bool) {
	switch {
	case g.protocolType != "" && g.isEmpty():
		return true, true
	case g.protocolType == "consumer" && g.state == Stable:
		return false, g.subscribedTopics() != nil
	case g.protocolType == "":
		return false, true
	}
	return false, false
}

// tombstones delete the group's metadata record, if it ever had a
// generation (and so a record).
func (g *classicGroup) tombstones() []record.Record {
	if g.generation > 0 {
		return []record.Record{groupRecord(g.name, nil)}
	}
	return nil
}

func (g *classicGroup) startSessions() {
	for _, m := range g.members {
		g.touch(m)
	}
}

func (g *classicGroup) drop(err error) {
	for _, m := range g.members {
		m.failWaiting(err)
		if m.timer != nil {
			m.timer.Stop()
			m.timer = nil
		}
	}
	for id, t := range g.pending {
		t.Stop()
		delete(g.pending, id)
	}
	g.stopJoinTimer()
	g.stopSyncTimer()
	g.removed = true
	g.state = Dead
}

func (g *classicGroup) setState(s State) {
	g.state = s
	g.stateTime = time.Now()
}

func (g *classicGroup) stopJoinTimer() {
	g.joinSeq++
	if g.joinTimer != nil {
		g.joinTimer.Stop()
		g.joinTimer = nil
	}
}

func (g *classicGroup) stopSyncTimer() {
	if g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
}
