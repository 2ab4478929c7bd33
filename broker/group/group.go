package group

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// State is a classic group's state, as Kafka names it.
type State int8

// The states of a classic group (Kafka's GroupState).
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

// Group is one classic consumer group. All fields are guarded by mu.
type Group struct {
	c    *Coordinator
	sh   *shard
	name string

	mu           sync.Mutex
	removed      bool // dropped from its shard; a lookup must start over
	state        State
	stateTime    time.Time // when state last changed
	protocolType string    // "" for groups that only store offsets
	protocol     string    // selected protocol of the current generation
	generation   int32
	leader       string
	members      map[string]*member
	static       map[string]string      // group.instance.id → member id
	pending      map[string]*time.Timer // member ids handed out with MEMBER_ID_REQUIRED
	pendingSync  map[string]struct{}    // members yet to send SyncGroup this generation
	offsets      map[TopicPartition]Offset
	consumer     *consumerGroup // set for a KIP-848 group (the classic fields are then unused)

	// The join phase (PreparingRebalance): its deadline timer, a token that
	// makes stale timers harmless, and the initial-delay bookkeeping.
	joinTimer     *time.Timer
	joinSeq       uint64
	initialDelay  bool      // in group.initial.rebalance.delay
	lastArrival   time.Time // of the last member announced in the initial delay
	delayDeadline time.Time // the initial delay's bound: the rebalance timeout
	syncTimer     *time.Timer
}

// member is one member of a classic group.
type member struct {
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

func newGroup(c *Coordinator, sh *shard, name string) *Group {
	return &Group{
		c: c, sh: sh, name: name,
		state:       Empty,
		stateTime:   time.Now(),
		members:     map[string]*member{},
		static:      map[string]string{},
		pending:     map[string]*time.Timer{},
		pendingSync: map[string]struct{}{},
		offsets:     map[TopicPartition]Offset{},
	}
}

// empty reports whether the group has no members (classic or KIP-848)
// and no member about to join with a handed-out id.
func (g *Group) empty() bool {
	if g.consumer != nil {
		return len(g.consumer.members) == 0
	}
	return g.state == Empty && len(g.pending) == 0
}

func (g *Group) setState(s State) {
	g.state = s
	g.stateTime = time.Now()
}

// newMemberID is Kafka's member id: the client id (or the static instance
// id) and a random UUID.
func newMemberID(clientID string, instanceID *string) string {
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// fenced reports whether instanceID now belongs to a member other than
// memberID (Kafka's isStaticMemberFenced).
func (g *Group) fenced(instanceID *string, memberID string) bool {
	if instanceID == nil {
		return false
	}
	cur, ok := g.static[*instanceID]
	return ok && cur != memberID
}

// touch pushes a member's session deadline to now + d and makes sure the
// expiry timer fires no later than that.
func (g *Group) touchFor(m *member, d time.Duration) {
	now := time.Now()
	m.deadline = now.Add(d)
	if m.timer != nil && !m.deadline.Before(m.timerAt) {
		return // the armed timer fires first and re-arms itself
	}
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timerAt = m.deadline
	m.timer = time.AfterFunc(d, func() { g.sessionExpired(m) })
}

func (g *Group) touch(m *member) { g.touchFor(m, m.sessionTimeout) }

// sessionExpired runs when a member's session timer fires.
func (g *Group) sessionExpired(m *member) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removed || g.members[m.id] != m {
		return
	}
	now := time.Now()
	if now.Before(m.deadline) {
		m.timerAt = m.deadline
		m.timer = time.AfterFunc(m.deadline.Sub(now), func() { g.sessionExpired(m) })
		return
	}
	if !m.new && (m.join != nil || m.sync != nil) {
		// Members waiting in a rebalance satisfy their heartbeats.
		m.timer = nil
		g.touch(m)
		return
	}
	g.c.log.Info("group member session expired", "group", g.name, "member", m.id)
	g.removeAndRebalance(m)
}

// removeAndRebalance removes a member that left or expired and moves the
// group on (Kafka's removeMemberAndUpdateGroup).
func (g *Group) removeAndRebalance(m *member) {
	if m.join != nil {
		m.join <- JoinResult{Err: ErrUnknownMemberID, Generation: -1}
		m.join = nil
	}
	if m.sync != nil {
		m.sync <- SyncResult{Err: ErrUnknownMemberID}
		m.sync = nil
	}
	g.removeMember(m)
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance()
	case PreparingRebalance:
		g.maybeCompleteJoin()
	}
}

// removeMember drops a member without moving the group on.
func (g *Group) removeMember(m *member) {
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	if g.leader == m.id {
		g.leader = ""
		if ids := g.memberIDs(); len(ids) > 0 {
			g.leader = ids[0]
		}
	}
}

// memberIDs returns the member ids in sorted order, so that every choice
// among members is deterministic.
func (g *Group) memberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// rebalanceTimeout is the largest rebalance timeout of the members.
func (g *Group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// supportsProtocols is Kafka's GroupMetadata.supportsProtocols: an Empty
// group takes any non-empty protocol type and list; otherwise the type must
// match and one protocol must be supported by every member.
func (g *Group) supportsProtocols(protocolType string, protocols []Protocol) bool {
	if g.state == Empty && len(g.members) == 0 {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.supportedByAll(p.Name) {
			return true
		}
	}
	return false
}

func (g *Group) supportedByAll(name string) bool {
	for _, m := range g.members {
		if !slices.ContainsFunc(m.protocols, func(p Protocol) bool { return p.Name == name }) {
			return false
		}
	}
	return true
}

// selectProtocol picks the protocol for the next generation: among those
// every member supports, the one most members list first (ties go to the
// earliest in the first member's list).
func (g *Group) selectProtocol() string {
	ids := g.memberIDs()
	if len(ids) == 0 {
		return ""
	}
	votes := map[string]int{}
	for _, id := range ids {
		for _, p := range g.members[id].protocols {
			if g.supportedByAll(p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", 0
	for _, p := range g.members[ids[0]].protocols {
		if v := votes[p.Name]; v > bestVotes {
			best, bestVotes = p.Name, v
		}
	}
	return best
}

// metadataFor returns a member's metadata for the group's protocol.
func (m *member) metadataFor(protocol string) []byte {
	return protocolMetadata(m.protocols, protocol)
}

// sameProtocols reports whether ps equals the member's protocols, names and
// metadata, in order.
func (m *member) sameProtocols(ps []Protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b Protocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

// drop answers every waiting request with err, stops the timers and marks
// the group removed. Used when its partition is resigned.
func (g *Group) drop(err error) {
	for _, m := range g.members {
		if m.join != nil {
			m.join <- JoinResult{Err: err, Generation: -1}
			m.join = nil
		}
		if m.sync != nil {
			m.sync <- SyncResult{Err: err}
			m.sync = nil
		}
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
	if g.consumer != nil {
		g.consumer.stopTimers()
	}
	g.removed = true
	g.state = Dead
}

func (g *Group) stopJoinTimer() {
	g.joinSeq++
	if g.joinTimer != nil {
		g.joinTimer.Stop()
		g.joinTimer = nil
	}
}

func (g *Group) stopSyncTimer() {
	if g.syncTimer != nil {
		g.syncTimer.Stop()
		g.syncTimer = nil
	}
}
