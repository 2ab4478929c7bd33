package group

import "time"

// maybePrepareRebalance starts a rebalance unless one is already preparing.
func (g *classicGroup) maybePrepareRebalance() {
	switch g.state {
	case Empty, Stable, CompletingRebalance:
		g.prepareRebalance()
	}
}

// prepareRebalance moves the group to PreparingRebalance (Kafka's
// prepareRebalance): members waiting in SyncGroup are told to rejoin, and
// the join phase ends when every member has rejoined or the rebalance
// timeout passes. A group coming out of Empty first waits
// group.initial.rebalance.delay.ms for more members, as Kafka does, and
// while they keep coming, up to the rebalance timeout: the delay ends once
// a whole delay passed since the last new member announced itself (its
// first JoinGroup) and every announced member has joined. Kafka re-arms
// whole delay windows instead, and does not wait for members it handed an
// id to, so it ends a little later or misses members a round trip away.
func (g *classicGroup) prepareRebalance() {
	if g.state == CompletingRebalance {
		g.failSyncs(ErrRebalanceInProgress)
	}
	g.stopSyncTimer()
	clear(g.pendingSync)
	g.stopJoinTimer()
	initial := g.state == Empty
	g.c.log.Info("preparing to rebalance group", "group", g.name, "state", g.state, "generation", g.generation, "members", len(g.members))
	g.setState(PreparingRebalance)
	if initial {
		delay := g.c.cfg.InitialRebalanceDelay
		if delay <= 0 {
			g.completeJoin()
			return
		}
		g.initialDelay = true
		g.lastArrival = time.Now()
		g.delayDeadline = g.lastArrival.Add(g.rebalanceTimeout())
		g.armJoinTimer(min(delay, g.rebalanceTimeout()))
		return
	}
	g.initialDelay = false
	g.armJoinTimer(g.rebalanceTimeout())
	g.maybeCompleteJoin()
}

// failSyncs clears the assignments and answers waiting SyncGroups with err.
func (g *classicGroup) failSyncs(err error) {
	for _, m := range g.members {
		m.assignment = nil
		if m.sync != nil {
			m.sync <- SyncResult{Err: err}
			m.sync = nil
		}
	}
}

// armJoinTimer ends the join phase after d unless it ends earlier.
func (g *classicGroup) armJoinTimer(d time.Duration) {
	g.joinSeq++
	seq := g.joinSeq
	if g.joinTimer != nil {
		g.joinTimer.Stop()
	}
	g.joinTimer = time.AfterFunc(d, func() { g.joinTimerFired(seq) })
}

func (g *classicGroup) joinTimerFired(seq uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removed || seq != g.joinSeq || g.state != PreparingRebalance {
		return
	}
	g.joinTimer = nil
	if g.initialDelay && len(g.pending) > 0 {
		// Members given an id are a round trip away: wait for them (their
		// join or expiry ends the delay), within the rebalance timeout.
		if left := time.Until(g.delayDeadline); left > 0 {
			g.armJoinTimer(left)
			return
		}
	}
	g.completeJoin()
}

// announced notes a new member's first JoinGroup during the initial delay
// of a new group (one that never had a generation): the delay restarts,
// within the rebalance timeout.
func (g *classicGroup) announced() {
	if !g.initialDelay || g.state != PreparingRebalance || g.generation != 0 {
		return
	}
	now := time.Now()
	g.lastArrival = now
	if d := min(g.c.cfg.InitialRebalanceDelay, g.delayDeadline.Sub(now)); d > 0 {
		g.armJoinTimer(d)
	}
}

// maybeEndInitialDelay ends the initial delay once a whole delay passed
// since the last member announced itself and every announced member has
// joined.
func (g *classicGroup) maybeEndInitialDelay() {
	if !g.initialDelay || g.state != PreparingRebalance || len(g.pending) > 0 || g.awaitingJoin() != len(g.members) {
		return
	}
	if time.Since(g.lastArrival) >= g.c.cfg.InitialRebalanceDelay {
		g.completeJoin()
	}
}

// maybeCompleteJoin ends the join phase early once every member has
// rejoined and no handed-out member id is still to come back (in the
// initial delay, also only once a whole delay passed since the last member
// announced itself).
func (g *classicGroup) maybeCompleteJoin() {
	if g.initialDelay {
		g.maybeEndInitialDelay()
		return
	}
	if g.state != PreparingRebalance {
		return
	}
	if len(g.pending) == 0 && g.awaitingJoin() == len(g.members) {
		g.completeJoin()
	}
}

// completeJoin ends the join phase (Kafka's onCompleteJoin): dynamic
// members that did not rejoin are removed (static ones stay until their
// session expires), the generation advances and every joined member gets
// its JoinGroup answer, the leader with all members' metadata.
func (g *classicGroup) completeJoin() {
	g.stopJoinTimer()
	g.initialDelay = false
	for _, id := range g.memberIDs() {
		if m := g.members[id]; m.join == nil && m.instanceID == nil {
			g.removeMember(m)
		}
	}
	if len(g.members) > 0 && !g.electJoinedLeader() {
		// Only static members that did not rejoin remain: wait for their
		// sessions to expire or for them to come back.
		g.armJoinTimer(g.rebalanceTimeout())
		return
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocol = ""
		g.setState(Empty)
		if err := g.storeGroup(nil); err != nil {
			g.c.log.Warn("store empty group", "group", g.name, "err", err)
		}
		return
	}
	g.protocol = g.selectProtocol()
	g.setState(CompletingRebalance)
	for id, m := range g.members {
		g.pendingSync[id] = struct{}{}
		if m.join != nil {
			m.join <- g.joinResult(m, false)
			m.join = nil
		}
		m.new = false
		g.touch(m)
	}
	g.c.log.Info("group joined", "group", g.name, "generation", g.generation, "protocol", g.protocol, "leader", g.leader, "members", len(g.members))
	gen := g.generation
	g.syncTimer = time.AfterFunc(g.rebalanceTimeout(), func() { g.syncExpired(gen) })
}

// electJoinedLeader keeps the leader if it rejoined, else picks a member
// that did; false if none did.
func (g *classicGroup) electJoinedLeader() bool {
	if l := g.members[g.leader]; l != nil && l.join != nil {
		return true
	}
	for _, id := range g.memberIDs() {
		if g.members[id].join != nil {
			g.leader = id
			return true
		}
	}
	return false
}

// syncExpired removes the members of generation gen that never sent
// SyncGroup within the rebalance timeout, and rebalances without them.
func (g *classicGroup) syncExpired(gen int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removed || gen != g.generation || len(g.pendingSync) == 0 {
		return
	}
	if g.state != CompletingRebalance && g.state != Stable {
		return
	}
	for id := range g.pendingSync {
		if m := g.members[id]; m != nil {
			g.c.log.Info("group member did not sync in time", "group", g.name, "member", id)
			if m.sync != nil {
				m.sync <- SyncResult{Err: ErrUnknownMemberID}
				m.sync = nil
			}
			g.removeMember(m)
		}
	}
	clear(g.pendingSync)
	g.prepareRebalance()
}
