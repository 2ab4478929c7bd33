package group

import (
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// memberState is where a KIP-848 member is in reconciling its assignment
// with the target (Kafka's MemberState).
type memberState int8

const (
	memberStable     memberState = iota // owns its target (as far as released)
	memberUnrevoked                     // must give up partitions first
	memberUnreleased                    // waits for partitions others still own
)

// consumerGroup is the state of a KIP-848 group: members heartbeat, the
// coordinator computes the target assignment with a server-side assignor
// and hands it out incrementally, revoking before assigning, so no member
// ever stops the world. Guarded by the Group's mutex.
type consumerGroup struct {
	epoch       int32 // group epoch: bumped by every membership or subscription change
	targetEpoch int32 // epoch of the target assignment
	assignor    string
	members     map[string]*cmember
	static      map[string]string      // instance id → member id
	target      map[string]Assignment  // member id → target assignment
	owners      map[idPartition]string // member that owns (or is revoking) each partition
	topicsSeen  string                 // fingerprint of the subscribed topics' metadata at the last target
	topicNames  map[[16]byte]string    // id → name, from the last target computation
	written     map[string][]byte      // records last written to __consumer_offsets (records848.go), key → value
}

// cmember is one member of a KIP-848 group.
type cmember struct {
	id                   string
	instanceID, rackID   *string
	clientID, clientHost string
	epoch, prevEpoch     int32
	leftEpoch            int32 // epoch before a static member's temporary leave (-2)
	state                memberState
	rebalanceTimeout     time.Duration
	topics               []string // subscribed names, sorted
	regex                *string
	re                   *regexp.Regexp
	assignor             string

	assigned Assignment // partitions the member may use
	revoking Assignment // partitions it must give up
	sent     Assignment // assignment last sent to it

	deadline    time.Time
	timer       *time.Timer
	timerAt     time.Time
	revokeTimer *time.Timer
	revokeSeq   uint64
}

// ConsumerHeartbeatRequest is a ConsumerGroupHeartbeat (KIP-848). Nil
// fields are unchanged since the member's previous heartbeat.
type ConsumerHeartbeatRequest struct {
	Group       string
	MemberID    string
	MemberEpoch int32 // 0 joins, -1 leaves, -2 leaves temporarily (static members)
	InstanceID  *string
	RackID      *string
	ClientID    string
	ClientHost  string

	RebalanceTimeout time.Duration // < 0: unchanged
	SubscribedTopics []string      // nil: unchanged
	SubscribedRegex  *string
	ServerAssignor   *string
	Owned            Assignment // partitions the member owns; nil: unchanged

	// GenerateMemberID (v0): the coordinator names joining members; v1+
	// members bring their own id.
	GenerateMemberID bool
}

// ConsumerHeartbeatResult answers a ConsumerGroupHeartbeat.
type ConsumerHeartbeatResult struct {
	Err               error
	MemberID          string
	MemberEpoch       int32
	HeartbeatInterval time.Duration
	Assignment        Assignment // nil: not sent (unchanged)
}

// ConsumerHeartbeat handles a ConsumerGroupHeartbeat: it joins, leaves or
// keeps a member alive, moves the group's target assignment when
// membership, subscriptions or topic metadata changed, and reconciles the
// member one step towards its target.
func (c *Coordinator) ConsumerHeartbeat(req ConsumerHeartbeatRequest) ConsumerHeartbeatResult {
	res := ConsumerHeartbeatResult{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch, HeartbeatInterval: c.cfg.ConsumerHeartbeatInterval}
	if err := checkConsumerHeartbeat(&req); err != nil {
		res.Err = err
		return res
	}
	join := req.MemberEpoch == 0
	err := c.withGroup(req.Group, join, func(g *Group) error {
		cg, err := g.asConsumerGroup(join)
		if err != nil {
			return err
		}
		err = g.consumerHeartbeat(cg, &req, &res)
		if perr := g.persistConsumer(); perr != nil && err == nil {
			err = perr
		}
		return err
	})
	if errors.Is(err, ErrGroupNotFound) && !join {
		err = ErrUnknownMemberID
	}
	res.Err = err
	return res
}

// checkConsumerHeartbeat validates the request as Kafka does before the
// group is touched (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR).
func checkConsumerHeartbeat(req *ConsumerHeartbeatRequest) error {
	invalid := func(msg string) error { return fmt.Errorf("%w: %s", ErrInvalidRequest, msg) }
	switch {
	case req.Group == "":
		return invalid("GroupId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return invalid("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return invalid("RackId can't be empty.")
	case req.ServerAssignor != nil && *req.ServerAssignor != AssignorUniform && *req.ServerAssignor != AssignorRange:
		return fmt.Errorf("%w: %q", ErrUnsupportedAssignor, *req.ServerAssignor)
	case req.MemberEpoch < -2:
		return invalid("MemberEpoch is invalid.")
	}
	if req.MemberEpoch != 0 {
		if req.MemberID == "" {
			return invalid("MemberId can't be empty.")
		}
		return nil
	}
	switch {
	case req.GenerateMemberID && req.MemberID != "":
		return invalid("MemberId must be empty when joining (v0).")
	case !req.GenerateMemberID && req.MemberID == "":
		return invalid("MemberId can't be empty.")
	case req.RebalanceTimeout < 0:
		return invalid("RebalanceTimeoutMs must be provided when joining.")
	case req.SubscribedTopics == nil && req.SubscribedRegex == nil:
		return invalid("SubscribedTopicNames or SubscribedTopicRegex must be set when joining.")
	case req.Owned == nil || req.Owned.count() > 0:
		return invalid("TopicPartitions must be empty when (re-)joining.")
	}
	if req.SubscribedRegex != nil {
		if _, err := regexp.Compile(*req.SubscribedRegex); err != nil {
			return invalid("SubscribedTopicRegex is not a valid regular expression.")
		}
	}
	if req.GenerateMemberID {
		var u [16]byte
		_, _ = rand.Read(u[:])
		req.MemberID = base64.RawURLEncoding.EncodeToString(u[:])
	}
	return nil
}

// asConsumerGroup returns the group's KIP-848 state, turning an empty
// classic group into a consumer group. A classic group with members is not
// a consumer group (GROUP_ID_NOT_FOUND, as Kafka without migration).
func (g *Group) asConsumerGroup(create bool) (*consumerGroup, error) {
	if g.consumer != nil {
		return g.consumer, nil
	}
	if g.state != Empty || len(g.members) > 0 || len(g.pending) > 0 {
		return nil, fmt.Errorf("%w: %s is a classic group", ErrGroupNotFound, g.name)
	}
	if !create {
		return nil, ErrUnknownMemberID
	}
	g.consumer = &consumerGroup{
		assignor: AssignorUniform,
		members:  map[string]*cmember{},
		static:   map[string]string{},
		target:   map[string]Assignment{},
		owners:   map[idPartition]string{},
	}
	g.protocolType, g.protocol, g.leader = "consumer", "", ""
	return g.consumer, nil
}

// consumerHeartbeat is the body of ConsumerHeartbeat with the group locked.
func (g *Group) consumerHeartbeat(cg *consumerGroup, req *ConsumerHeartbeatRequest, res *ConsumerHeartbeatResult) error {
	var m *cmember
	var err error
	switch req.MemberEpoch {
	case -1, -2:
		return g.consumerLeave(cg, req, res)
	case 0:
		m, err = g.consumerJoin(cg, req)
	default:
		m, err = g.consumerMember(cg, req)
	}
	if err != nil {
		return err
	}
	if g.updateSubscription(cg, m, req) {
		cg.epoch++
	}
	g.touchConsumer(m)
	topics := g.c.topicsByName()
	if fp := cg.fingerprint(topics); fp != cg.topicsSeen && cg.targetEpoch == cg.epoch {
		cg.epoch++ // topic metadata changed (partitions added, topics created or deleted)
	}
	if cg.epoch > cg.targetEpoch {
		g.computeTarget(cg, topics)
	}
	g.reconcile(cg, m, req.Owned)
	full := req.MemberEpoch == 0 || req.RebalanceTimeout >= 0 && (req.SubscribedTopics != nil || req.SubscribedRegex != nil) && req.Owned != nil
	res.MemberID, res.MemberEpoch = m.id, m.epoch
	if full || !m.assigned.equal(m.sent) {
		res.Assignment = m.assigned.clone()
		m.sent = m.assigned.clone()
	}
	return nil
}

// consumerJoin adds a member (epoch 0): a new one, a static member taking
// over its instance id's place after a temporary leave, or a known member
// starting over (after being fenced), which releases what it owned.
func (g *Group) consumerJoin(cg *consumerGroup, req *ConsumerHeartbeatRequest) (*cmember, error) {
	m := cg.members[req.MemberID]
	var old *cmember
	if req.InstanceID != nil {
		if oid, ok := cg.static[*req.InstanceID]; ok && oid != req.MemberID {
			if old = cg.members[oid]; old != nil && old.epoch != -2 {
				return nil, fmt.Errorf("%w: instance %s is still in use by member %s", ErrUnreleasedInstanceID, *req.InstanceID, oid)
			}
		}
	}
	switch {
	case m != nil:
		g.disown(cg, m)
		m.assigned, m.revoking, m.sent = Assignment{}, Assignment{}, nil
		m.epoch, m.prevEpoch, m.state = 0, 0, memberStable
		g.stopRevokeTimer(m)
	case old != nil:
		// A restarted static member: same place, same assignment, new id.
		g.disown(cg, old)
		delete(cg.members, old.id)
		cg.target[req.MemberID] = cg.target[old.id]
		delete(cg.target, old.id)
		m = old
		m.id, m.epoch, m.sent = req.MemberID, m.leftEpoch, nil
		g.own(cg, m)
	default:
		if len(cg.members) >= g.c.cfg.MaxSize {
			return nil, ErrGroupMaxSize
		}
		m = &cmember{id: req.MemberID, assigned: Assignment{}, revoking: Assignment{}}
		if req.SubscribedTopics != nil && len(req.SubscribedTopics) == 0 && req.SubscribedRegex == nil {
			cg.epoch++ // subscribes to nothing: updateSubscription sees no change
		}
	}
	m.instanceID, m.rackID = req.InstanceID, req.RackID
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	cg.members[m.id] = m
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
	return m, nil
}

// consumerMember finds the member of a regular heartbeat and checks its
// epoch (Kafka's throwIfMemberEpochIsInvalid): a member one epoch behind
// is accepted while it owns no more than it is assigned, as it may not
// have seen its new assignment yet.
func (g *Group) consumerMember(cg *consumerGroup, req *ConsumerHeartbeatRequest) (*cmember, error) {
	m := cg.members[req.MemberID]
	if m == nil {
		if req.InstanceID != nil {
			if _, ok := cg.static[*req.InstanceID]; ok {
				return nil, ErrFencedInstanceID
			}
		}
		return nil, ErrUnknownMemberID
	}
	if req.InstanceID != nil && cg.static[*req.InstanceID] != m.id {
		return nil, ErrFencedInstanceID
	}
	switch {
	case req.MemberEpoch > m.epoch:
		return nil, fmt.Errorf("%w: epoch %d, the member is at %d", ErrFencedMemberEpoch, req.MemberEpoch, m.epoch)
	case req.MemberEpoch < m.epoch:
		if req.MemberEpoch != m.prevEpoch || req.Owned == nil || req.Owned.minus(m.assigned).count() > 0 {
			return nil, fmt.Errorf("%w: epoch %d, the member is at %d", ErrFencedMemberEpoch, req.MemberEpoch, m.epoch)
		}
	}
	return m, nil
}

// consumerLeave handles epochs -1 (leave) and -2 (a static member leaves
// for a restart: it keeps its place and partitions until its session
// expires or its instance id rejoins).
func (g *Group) consumerLeave(cg *consumerGroup, req *ConsumerHeartbeatRequest, res *ConsumerHeartbeatResult) error {
	m := cg.members[req.MemberID]
	if m == nil {
		return ErrUnknownMemberID
	}
	res.MemberEpoch = req.MemberEpoch
	if req.MemberEpoch == -2 && m.instanceID != nil {
		if m.epoch != -2 {
			m.leftEpoch = m.epoch
		}
		m.epoch = -2
		g.stopRevokeTimer(m)
		return nil
	}
	res.MemberEpoch = -1
	g.removeConsumer(cg, m)
	return nil
}

// updateSubscription applies the request's changes to a member and
// reports whether its subscription or assignor changed.
func (g *Group) updateSubscription(cg *consumerGroup, m *cmember, req *ConsumerHeartbeatRequest) bool {
	if req.RebalanceTimeout >= 0 {
		m.rebalanceTimeout = req.RebalanceTimeout
	}
	changed := false
	if req.SubscribedTopics != nil {
		ts := slices.Compact(slices.Sorted(slices.Values(req.SubscribedTopics)))
		if !slices.Equal(ts, m.topics) {
			m.topics, changed = ts, true
		}
	}
	if req.SubscribedRegex != nil && (m.regex == nil || *m.regex != *req.SubscribedRegex) {
		if re := compileSubscription(*req.SubscribedRegex); re != nil {
			r := *req.SubscribedRegex
			m.regex, m.re, changed = &r, re, true
		}
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.assignor {
		m.assignor, changed = *req.ServerAssignor, true
	}
	return changed
}

// removeConsumer removes a member that left, expired or was fenced; the
// others reconcile to a new target on their next heartbeats.
func (g *Group) removeConsumer(cg *consumerGroup, m *cmember) {
	g.disown(cg, m)
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	g.stopRevokeTimer(m)
	cg.epoch++
	if len(cg.members) == 0 {
		g.stateTime = time.Now()
	}
}

// computeTarget runs the assignor over the members' subscriptions.
func (g *Group) computeTarget(cg *consumerGroup, topics map[string]TopicInfo) {
	ids := make([]string, 0, len(cg.members))
	votes := map[string]int{}
	for id, m := range cg.members {
		ids = append(ids, id)
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	slices.Sort(ids)
	cg.topicNames = map[[16]byte]string{}
	subs := make([]subscriber, 0, len(ids))
	for _, id := range ids {
		s := subscriber{id: id, topics: cg.members[id].resolve(topics)}
		for _, t := range s.topics {
			cg.topicNames[t.ID] = t.Name
		}
		subs = append(subs, s)
	}
	if votes[AssignorRange] > votes[AssignorUniform] {
		cg.assignor = AssignorRange
		cg.target = assignRange(subs)
	} else {
		cg.assignor = AssignorUniform
		cg.target = assignUniform(subs, cg.target)
	}
	cg.targetEpoch = cg.epoch
	cg.topicsSeen = cg.fingerprint(topics)
	g.c.log.Info("computed consumer group target assignment", "group", g.name, "epoch", cg.epoch, "assignor", cg.assignor, "members", len(ids))
}

// resolve returns the existing topics the member subscribes to, by name
// or by regex (internal topics only by name), sorted by name.
func (m *cmember) resolve(topics map[string]TopicInfo) []TopicInfo {
	var out []TopicInfo
	for _, name := range m.topics {
		if t, ok := topics[name]; ok {
			out = append(out, t)
		}
	}
	if m.re != nil {
		for name, t := range topics {
			if !strings.HasPrefix(name, "__") && !slices.Contains(m.topics, name) && m.re.MatchString(name) {
				out = append(out, t)
			}
		}
	}
	slices.SortFunc(out, func(a, b TopicInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// fingerprint summarises the metadata of every topic the members
// subscribe to, so that a change (new partitions, a topic created or
// recreated) moves the target.
func (cg *consumerGroup) fingerprint(topics map[string]TopicInfo) string {
	seen := map[string]bool{}
	for _, m := range cg.members {
		for _, t := range m.resolve(topics) {
			seen[fmt.Sprintf("%s/%x/%d", t.Name, t.ID, t.Partitions)] = true
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}

// reconcile moves a member one step towards its target (Kafka's
// CurrentAssignmentBuilder): partitions it must give up are revoked first
// and its epoch stays until it confirms, by a heartbeat whose owned
// partitions no longer include them; then it gets the target partitions
// nobody else still owns and the target epoch.
func (g *Group) reconcile(cg *consumerGroup, m *cmember, owned Assignment) {
	switch m.state {
	case memberStable:
		if m.epoch == cg.targetEpoch {
			return
		}
	case memberUnrevoked:
		if owned == nil || owned.intersect(m.revoking).count() > 0 {
			return
		}
	}
	target := cg.target[m.id]
	keep := m.assigned.intersect(target)
	revoke := m.assigned.minus(target)
	g.disown(cg, m)
	if revoke.count() > 0 {
		m.assigned, m.revoking, m.state = keep, revoke, memberUnrevoked
		g.armRevokeTimer(cg, m)
	} else {
		next, unreleased := keep, false
		target.minus(keep).each(func(id [16]byte, p int32) {
			if o := cg.owners[idPartition{id, p}]; o == "" || o == m.id {
				next.add(id, p)
			} else {
				unreleased = true
			}
		})
		m.assigned, m.revoking = next, Assignment{}
		if m.epoch != cg.targetEpoch {
			m.prevEpoch, m.epoch = m.epoch, cg.targetEpoch
		}
		m.state = memberStable
		if unreleased {
			m.state = memberUnreleased
		}
		g.stopRevokeTimer(m)
	}
	g.own(cg, m)
}

func (g *Group) own(cg *consumerGroup, m *cmember) {
	set := func(id [16]byte, p int32) { cg.owners[idPartition{id, p}] = m.id }
	m.assigned.each(set)
	m.revoking.each(set)
}

func (g *Group) disown(cg *consumerGroup, m *cmember) {
	drop := func(id [16]byte, p int32) {
		if k := (idPartition{id, p}); cg.owners[k] == m.id {
			delete(cg.owners, k)
		}
	}
	m.assigned.each(drop)
	m.revoking.each(drop)
}

// touchConsumer restarts a member's session (group.consumer.session.timeout.ms).
func (g *Group) touchConsumer(m *cmember) {
	d := g.c.cfg.ConsumerSessionTimeout
	m.deadline = time.Now().Add(d)
	if m.timer != nil && !m.deadline.Before(m.timerAt) {
		return
	}
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timerAt = m.deadline
	m.timer = time.AfterFunc(d, func() { g.consumerSessionExpired(m) })
}

func (g *Group) consumerSessionExpired(m *cmember) {
	g.mu.Lock()
	defer g.mu.Unlock()
	cg := g.consumer
	if g.removed || cg == nil || cg.members[m.id] != m {
		return
	}
	if now := time.Now(); now.Before(m.deadline) {
		m.timerAt = m.deadline
		m.timer = time.AfterFunc(m.deadline.Sub(now), func() { g.consumerSessionExpired(m) })
		return
	}
	g.c.log.Info("consumer group member session expired", "group", g.name, "member", m.id)
	m.timer = nil
	g.removeConsumer(cg, m)
	g.persistQuietly()
}

// armRevokeTimer fences the member if it has not revoked within its
// rebalance timeout.
func (g *Group) armRevokeTimer(cg *consumerGroup, m *cmember) {
	g.stopRevokeTimer(m)
	seq := m.revokeSeq
	m.revokeTimer = time.AfterFunc(m.rebalanceTimeout, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.removed || g.consumer != cg || cg.members[m.id] != m || m.revokeSeq != seq || m.state != memberUnrevoked {
			return
		}
		g.c.log.Info("consumer group member did not revoke in time", "group", g.name, "member", m.id)
		g.removeConsumer(cg, m)
		g.persistQuietly()
	})
}

func (g *Group) stopRevokeTimer(m *cmember) {
	m.revokeSeq++
	if m.revokeTimer != nil {
		m.revokeTimer.Stop()
		m.revokeTimer = nil
	}
}

// consumerState is the KIP-848 group state as ListGroups and
// ConsumerGroupDescribe show it.
func (cg *consumerGroup) state() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.targetEpoch != cg.epoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.targetEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// stopConsumerTimers stops every timer of a consumer group.
func (cg *consumerGroup) stopTimers() {
	for _, m := range cg.members {
		if m.timer != nil {
			m.timer.Stop()
			m.timer = nil
		}
		m.revokeSeq++
		if m.revokeTimer != nil {
			m.revokeTimer.Stop()
			m.revokeTimer = nil
		}
	}
}
