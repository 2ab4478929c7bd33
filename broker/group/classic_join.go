package group

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinRequest is a JoinGroup.
type JoinRequest struct {
	Group      string
	MemberID   string  // "" for a member joining for the first time
	InstanceID *string // group.instance.id of a static member (KIP-345)
	ClientID   string
	ClientHost string

	ProtocolType     string
	Protocols        []Protocol
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration

	// RequireKnownMemberID (JoinGroup v4+): a dynamic member without an id
	// gets one back with ErrMemberIDRequired and must rejoin with it.
	RequireKnownMemberID bool
	// SupportsSkipAssignment (JoinGroup v9+, KIP-814): a static leader
	// rejoining a stable group is told it leads but must not reassign.
	SupportsSkipAssignment bool
	Reason                 string
}

// JoinResult answers a JoinGroup. On error only Err, MemberID (for
// ErrMemberIDRequired) and Generation (-1) are meaningful.
type JoinResult struct {
	Err            error
	MemberID       string
	Generation     int32
	ProtocolType   string
	Protocol       string
	LeaderID       string
	SkipAssignment bool
	// Members is filled for the leader only: every member's metadata for
	// the selected protocol.
	Members []MemberMetadata
}

// MemberMetadata is one member's protocol metadata as the leader sees it.
type MemberMetadata struct {
	MemberID   string
	InstanceID *string
	Metadata   []byte
}

// Join handles a JoinGroup. It returns at once for errors and for members
// whose join changes nothing; otherwise it waits until the join phase of
// the rebalance ends (or ctx is done, which returns ctx's error).
func (c *Coordinator) Join(ctx context.Context, req JoinRequest) JoinResult {
	res, wait := c.startJoin(req)
	return await(ctx, res, wait, joinFailed)
}

// joinFailed is the answer to a JoinGroup that failed with err.
func joinFailed(err error) JoinResult { return JoinResult{Err: err, Generation: -1} }

// startJoin runs a JoinGroup up to the point where it would wait: either a
// result, or a channel that receives it.
func (c *Coordinator) startJoin(req JoinRequest) (JoinResult, <-chan JoinResult) {
	if req.Group == "" {
		return joinFailed(ErrInvalidGroupID), nil
	}
	if req.SessionTimeout < c.cfg.MinSessionTimeout || req.SessionTimeout > c.cfg.MaxSessionTimeout {
		return joinFailed(ErrInvalidSessionTimeout), nil
	}
	create := createNone
	if req.MemberID == "" {
		create = createClassic
	}
	return startWaiting(c, req.Group, create, joinFailed, func(gr group) (JoinResult, chan JoinResult, error) {
		g, err := c.classicForJoin(gr)
		if err != nil {
			return JoinResult{}, nil, err
		}
		res, wait := g.join(&req)
		if g.state == PreparingRebalance {
			g.maybeCompleteJoin()
		}
		return res, wait, nil
	})
}

// join is Kafka's handleJoinGroup body, with the group locked. It returns a
// result, or a channel when the member now waits for the join phase.
func (g *classicGroup) join(req *JoinRequest) (JoinResult, chan JoinResult) {
	fail := func(err error) (JoinResult, chan JoinResult) { return joinFailed(err), nil }
	if !g.acceptJoining(req.MemberID) {
		if m := g.members[req.MemberID]; m != nil {
			g.removeAndRebalance(m)
		}
		return fail(ErrGroupMaxSize)
	}
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		return fail(ErrInconsistentProtocol)
	}
	if req.MemberID == "" {
		return g.joinNew(req)
	}
	return g.joinKnown(req)
}

// acceptJoining is Kafka's acceptJoiningMember: group.max.size bounds the
// members awaiting join while preparing a rebalance, else the group size.
func (g *classicGroup) acceptJoining(id string) bool {
	m := g.members[id]
	switch g.state {
	case Empty, Dead:
		return true
	case PreparingRebalance:
		return m != nil && m.join != nil || g.awaitingJoin() < g.c.cfg.MaxSize
	default:
		return m != nil || len(g.members) < g.c.cfg.MaxSize
	}
}

func (g *classicGroup) awaitingJoin() int {
	n := 0
	for _, m := range g.members {
		if m.join != nil {
			n++
		}
	}
	return n
}

// joinNew handles a member without a member id.
func (g *classicGroup) joinNew(req *JoinRequest) (JoinResult, chan JoinResult) {
	id := newMemberID(req.ClientID, req.InstanceID)
	if req.InstanceID != nil {
		if old, ok := g.static[*req.InstanceID]; ok && g.members[old] != nil {
			return g.replaceStatic(g.members[old], id, req)
		}
		g.announced()
		return JoinResult{}, g.addMember(id, req)
	}
	g.announced()
	if req.RequireKnownMemberID {
		pid := id
		g.pending[pid] = time.AfterFunc(req.SessionTimeout, func() { g.pendingExpired(pid) })
		return JoinResult{Err: ErrMemberIDRequired, MemberID: id, Generation: -1}, nil
	}
	return JoinResult{}, g.addMember(id, req)
}

// pendingExpired forgets a member id handed out with MEMBER_ID_REQUIRED
// whose member never came back.
func (g *classicGroup) pendingExpired(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removed {
		return
	}
	if _, ok := g.pending[id]; !ok {
		return
	}
	delete(g.pending, id)
	if g.state == PreparingRebalance {
		g.maybeCompleteJoin()
	}
}

// joinKnown handles a member that sent its member id.
func (g *classicGroup) joinKnown(req *JoinRequest) (JoinResult, chan JoinResult) {
	fail := func(err error) (JoinResult, chan JoinResult) {
		return JoinResult{Err: err, MemberID: req.MemberID, Generation: -1}, nil
	}
	if t, ok := g.pending[req.MemberID]; ok {
		t.Stop()
		delete(g.pending, req.MemberID)
		return JoinResult{}, g.addMember(req.MemberID, req)
	}
	if g.fenced(req.InstanceID, req.MemberID) {
		return fail(ErrFencedInstanceID)
	}
	m := g.members[req.MemberID]
	if m == nil {
		return fail(ErrUnknownMemberID)
	}
	if req.InstanceID != nil {
		if _, ok := g.static[*req.InstanceID]; !ok {
			return fail(ErrUnknownMemberID)
		}
	}
	switch g.state {
	case PreparingRebalance:
		return JoinResult{}, g.updateMember(m, req)
	case CompletingRebalance:
		if m.sameProtocols(req.Protocols) {
			// A retry of a join whose response was lost: answer with the
			// current generation.
			g.touch(m)
			return g.joinResult(m, false), nil
		}
		return JoinResult{}, g.updateMember(m, req)
	case Stable:
		if m.id == g.leader || !m.sameProtocols(req.Protocols) {
			// The leader rejoins to trigger a rebalance (for instance on
			// a metadata change); anyone with new metadata likewise.
			return JoinResult{}, g.updateMember(m, req)
		}
		g.touch(m)
		return g.joinResult(m, false), nil
	default:
		return fail(ErrUnknownMemberID)
	}
}

// replaceStatic handles a static member that rejoins without its member id
// (a restart): the new member id takes over the old member's place and
// assignment. In a Stable group nothing is rebalanced (KIP-345) unless
// keepsAssignment says the rejoin changes what the leader would assign.
func (g *classicGroup) replaceStatic(old *classicMember, id string, req *JoinRequest) (JoinResult, chan JoinResult) {
	if old.join != nil {
		old.join <- JoinResult{Err: ErrFencedInstanceID, MemberID: old.id, Generation: -1}
		old.join = nil
	}
	if old.sync != nil {
		old.sync <- SyncResult{Err: ErrFencedInstanceID}
		old.sync = nil
	}
	oldLeader := g.leader
	prev := *old
	delete(g.members, old.id)
	delete(g.pendingSync, old.id)
	if old.timer != nil {
		old.timer.Stop()
		old.timer = nil
	}
	m := old // keeps the assignment
	m.id = id
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	m.sessionTimeout, m.rebalanceTimeout = req.SessionTimeout, req.RebalanceTimeout
	m.protocols = req.Protocols
	g.members[id] = m
	g.static[*req.InstanceID] = id
	if g.leader == prev.id {
		g.leader = id
	}
	g.touch(m)

	g.c.log.Info("static member rejoined", "group", g.name, "instance", *req.InstanceID, "old", prev.id, "member", id, "state", g.state)
	switch g.state {
	case Stable:
		if g.keepsAssignment(prev.protocols, m.protocols) {
			if err := g.storeGroup(g.assignments()); err != nil {
				// Put the old member back, as Kafka reverts.
				delete(g.members, id)
				*m = prev
				m.timer = nil
				g.members[prev.id] = m
				g.static[*req.InstanceID] = prev.id
				g.leader = oldLeader
				g.touch(m)
				return JoinResult{Err: err, Generation: -1}, nil
			}
			res := g.joinResult(m, false)
			if req.SupportsSkipAssignment {
				res.SkipAssignment = m.id == g.leader
			} else {
				// Older clients must not believe they lead: a stable group
				// would ignore their new assignment.
				res.LeaderID, res.Members = oldLeader, nil
			}
			return res, nil
		}
		ch := make(chan JoinResult, 1)
		m.join = ch
		g.prepareRebalance()
		return JoinResult{}, ch
	case CompletingRebalance:
		// The leader may be assigning under the old member id.
		ch := make(chan JoinResult, 1)
		m.join = ch
		g.prepareRebalance()
		return JoinResult{}, ch
	default: // PreparingRebalance
		ch := make(chan JoinResult, 1)
		m.join = ch
		return JoinResult{}, ch
	}
}

// addMember adds a new member waiting in the join phase and starts or
// continues a rebalance.
func (g *classicGroup) addMember(id string, req *JoinRequest) chan JoinResult {
	ch := make(chan JoinResult, 1)
	m := &classicMember{
		id:               id,
		instanceID:       req.InstanceID,
		clientID:         req.ClientID,
		clientHost:       req.ClientHost,
		sessionTimeout:   req.SessionTimeout,
		rebalanceTimeout: req.RebalanceTimeout,
		protocols:        req.Protocols,
		join:             ch,
		new:              true,
	}
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	g.members[id] = m
	if g.leader == "" {
		g.leader = id
	}
	if req.InstanceID != nil {
		g.static[*req.InstanceID] = id
	}
	g.touchFor(m, newMemberJoinTimeout)
	g.maybePrepareRebalance()
	return ch
}

// updateMember takes a known member's new join and starts or continues a
// rebalance.
func (g *classicGroup) updateMember(m *classicMember, req *JoinRequest) chan JoinResult {
	ch := make(chan JoinResult, 1)
	m.protocols = req.Protocols
	m.sessionTimeout, m.rebalanceTimeout = req.SessionTimeout, req.RebalanceTimeout
	m.clientID, m.clientHost = req.ClientID, req.ClientHost
	if m.join != nil {
		// An earlier join of the same member is superseded.
		m.join <- JoinResult{Err: ErrRebalanceInProgress, MemberID: m.id, Generation: -1}
	}
	m.join = ch
	g.touch(m)
	g.maybePrepareRebalance()
	return ch
}

// joinResult is the successful answer for m in the current generation.
func (g *classicGroup) joinResult(m *classicMember, withMembers bool) JoinResult {
	res := JoinResult{
		MemberID:     m.id,
		Generation:   g.generation,
		ProtocolType: g.protocolType,
		Protocol:     g.protocol,
		LeaderID:     g.leader,
	}
	if m.id == g.leader || withMembers {
		for _, id := range g.memberIDs() {
			o := g.members[id]
			res.Members = append(res.Members, MemberMetadata{MemberID: o.id, InstanceID: o.instanceID, Metadata: o.metadataFor(g.protocol)})
		}
	}
	return res
}

// assignments returns every member's current assignment.
func (g *classicGroup) assignments() map[string][]byte {
	out := make(map[string][]byte, len(g.members))
	for id, m := range g.members {
		out[id] = m.assignment
	}
	return out
}

// keepsAssignment reports whether a static member whose protocols changed
// from old to cur can keep its assignment without a rebalance: the group's
// selected protocol must stay the one every member supports (Kafka's rule)
// and, for "consumer" groups, the member must subscribe to the same topics
// (Strata's addition; owned partitions and user data, which sticky
// assignors put in the metadata and a restarted client no longer has, do
// not count). cur is already in place in the group.
func (g *classicGroup) keepsAssignment(old, cur []Protocol) bool {
	if g.selectProtocol() != g.protocol {
		return false
	}
	if g.protocolType != "consumer" {
		return true
	}
	was, is := protocolMetadata(old, g.protocol), protocolMetadata(cur, g.protocol)
	if bytes.Equal(was, is) {
		return true
	}
	var a, b kmsg.ConsumerMemberMetadata
	if a.ReadFrom(was) != nil || b.ReadFrom(is) != nil {
		return false
	}
	sa, sb := slices.Clone(a.Topics), slices.Clone(b.Topics)
	slices.Sort(sa)
	slices.Sort(sb)
	return slices.Equal(slices.Compact(sa), slices.Compact(sb))
}

// protocolMetadata returns the metadata of the named protocol in ps.
func protocolMetadata(ps []Protocol, name string) []byte {
	for _, p := range ps {
		if p.Name == name {
			return p.Metadata
		}
	}
	return nil
}
