package group

import (
	"context"
	"errors"
)

// SyncRequest is a SyncGroup. The leader sends every member's assignment.
type SyncRequest struct {
	Group        string
	MemberID     string
	InstanceID   *string
	Generation   int32
	ProtocolType *string // v5+: checked against the group's when set
	Protocol     *string
	Assignments  map[string][]byte // leader only
}

// SyncResult answers a SyncGroup.
type SyncResult struct {
	Err          error
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// Sync handles a SyncGroup. Followers that sync before the leader wait for
// its assignment (or until ctx is done).
func (c *Coordinator) Sync(ctx context.Context, req SyncRequest) SyncResult {
	res, wait := c.startSync(req)
	return await(ctx, res, wait, syncFailed)
}

// syncFailed is the answer to a SyncGroup that failed with err.
func syncFailed(err error) SyncResult { return SyncResult{Err: err} }

func (c *Coordinator) startSync(req SyncRequest) (SyncResult, <-chan SyncResult) {
	if req.Group == "" {
		return syncFailed(ErrInvalidGroupID), nil
	}
	return startWaiting(c, req.Group, createNone, syncFailed, func(gr group) (SyncResult, chan SyncResult, error) {
		g, ok := gr.(*classicGroup)
		if !ok {
			return SyncResult{}, nil, ErrUnknownMemberID // no classic member is in a consumer group
		}
		res, wait := g.sync(&req)
		return res, wait, nil
	})
}

// sync is Kafka's doSyncGroup with the group locked.
func (g *classicGroup) sync(req *SyncRequest) (SyncResult, chan SyncResult) {
	fail := func(err error) (SyncResult, chan SyncResult) { return syncFailed(err), nil }
	if g.fenced(req.InstanceID, req.MemberID) {
		return fail(ErrFencedInstanceID)
	}
	m := g.members[req.MemberID]
	switch {
	case m == nil:
		return fail(ErrUnknownMemberID)
	case req.Generation != g.generation:
		return fail(ErrIllegalGeneration)
	case req.ProtocolType != nil && *req.ProtocolType != g.protocolType,
		req.Protocol != nil && *req.Protocol != g.protocol:
		return fail(ErrInconsistentProtocol)
	}
	switch g.state {
	case PreparingRebalance:
		return fail(ErrRebalanceInProgress)
	case CompletingRebalance:
		ch := make(chan SyncResult, 1)
		if m.sync != nil {
			m.sync <- SyncResult{Err: ErrRebalanceInProgress}
		}
		m.sync = ch
		delete(g.pendingSync, m.id)
		g.touch(m)
		if m.id == g.leader {
			g.completeSync(req.Assignments)
		}
		return SyncResult{}, ch
	case Stable:
		delete(g.pendingSync, m.id)
		g.touch(m)
		return SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment}, nil
	default:
		return fail(ErrUnknownMemberID)
	}
}

// completeSync takes the leader's assignment: it is written to
// __consumer_offsets with the generation, handed to the waiting members,
// and the group becomes Stable. Members the leader left out get an empty
// assignment. If the write fails the members are told and the group
// rebalances.
func (g *classicGroup) completeSync(assignments map[string][]byte) {
	assign := make(map[string][]byte, len(g.members))
	for id := range g.members {
		a := assignments[id]
		if a == nil {
			a = []byte{}
		}
		assign[id] = a
	}
	if err := g.storeGroup(assign); err != nil {
		g.c.log.Warn("store group assignment", "group", g.name, "generation", g.generation, "err", err)
		g.failSyncs(err)
		g.maybePrepareRebalance()
		return
	}
	for id, m := range g.members {
		m.assignment = assign[id]
		if m.sync != nil {
			m.sync <- SyncResult{ProtocolType: g.protocolType, Protocol: g.protocol, Assignment: m.assignment}
			m.sync = nil
		}
	}
	g.setState(Stable)
	g.c.log.Info("group stable", "group", g.name, "generation", g.generation, "members", len(g.members))
}

// HeartbeatRequest is a Heartbeat.
type HeartbeatRequest struct {
	Group      string
	MemberID   string
	InstanceID *string
	Generation int32
}

// Heartbeat keeps a member's session alive. It returns
// ErrRebalanceInProgress while the group prepares a rebalance, telling the
// member to rejoin.
func (c *Coordinator) Heartbeat(req HeartbeatRequest) error {
	if req.Group == "" {
		return ErrInvalidGroupID
	}
	err := c.withGroup(req.Group, createNone, func(gr group) error {
		g, ok := gr.(*classicGroup)
		if !ok {
			return ErrUnknownMemberID
		}
		if g.fenced(req.InstanceID, req.MemberID) {
			return ErrFencedInstanceID
		}
		m := g.members[req.MemberID]
		switch {
		case m == nil:
			return ErrUnknownMemberID
		case req.Generation != g.generation:
			return ErrIllegalGeneration
		}
		g.touch(m)
		switch g.state {
		case PreparingRebalance:
			return ErrRebalanceInProgress
		case CompletingRebalance, Stable:
			return nil
		default:
			return ErrUnknownMemberID
		}
	})
	if errors.Is(err, ErrGroupNotFound) {
		return ErrUnknownMemberID
	}
	return err
}

// LeavingMember names one member of a LeaveGroup: by member id, or (for an
// administrative removal) by instance id with an empty member id.
type LeavingMember struct {
	MemberID   string
	InstanceID *string
}

// Leave removes members from a group: each member gets its own error, and
// the second result is the error of the whole request. The member ids of
// members named by instance id are filled in.
func (c *Coordinator) Leave(groupID string, members []LeavingMember) ([]error, error) {
	errs := make([]error, len(members))
	if groupID == "" {
		return errs, ErrInvalidGroupID
	}
	err := c.withGroup(groupID, createNone, func(gr group) error {
		g, ok := gr.(*classicGroup)
		for i := range members {
			errs[i] = ErrUnknownMemberID
			if ok {
				errs[i] = g.leave(&members[i])
			}
		}
		return nil
	})
	if errors.Is(err, ErrGroupNotFound) {
		for i := range errs {
			errs[i] = ErrUnknownMemberID
		}
		return errs, nil
	}
	return errs, err
}

// leave removes one member (Kafka's handleLeaveGroup, per member).
func (g *classicGroup) leave(lm *LeavingMember) error {
	if lm.MemberID == "" {
		if lm.InstanceID == nil {
			return ErrUnknownMemberID
		}
		id, ok := g.static[*lm.InstanceID]
		if !ok || g.members[id] == nil {
			return ErrUnknownMemberID
		}
		lm.MemberID = id
		g.removeAndRebalance(g.members[id])
		return nil
	}
	if t, ok := g.pending[lm.MemberID]; ok {
		t.Stop()
		delete(g.pending, lm.MemberID)
		if g.state == PreparingRebalance {
			g.maybeCompleteJoin()
		}
		return nil
	}
	if g.fenced(lm.InstanceID, lm.MemberID) {
		return ErrFencedInstanceID
	}
	m := g.members[lm.MemberID]
	if m == nil {
		return ErrUnknownMemberID
	}
	g.removeAndRebalance(m)
	return nil
}
