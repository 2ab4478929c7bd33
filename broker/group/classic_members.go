package group

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"slices"
	"sort"
	"time"
)

// Member bookkeeping of classic groups: ids, sessions, removal, and the
// protocols the members support.

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
func (g *classicGroup) fenced(instanceID *string, memberID string) bool {
	if instanceID == nil {
		return false
	}
	cur, ok := g.static[*instanceID]
	return ok && cur != memberID
}

// touch pushes a member's session deadline to now + d and makes sure the
// expiry timer fires no later than that.
func (g *classicGroup) touchFor(m *classicMember, d time.Duration) {
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

func (g *classicGroup) touch(m *classicMember) { g.touchFor(m, m.sessionTimeout) }

// sessionExpired runs when a member's session timer fires.
func (g *classicGroup) sessionExpired(m *classicMember) {
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
func (g *classicGroup) removeAndRebalance(m *classicMember) {
	m.failWaiting(ErrUnknownMemberID)
	g.removeMember(m)
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance()
	case PreparingRebalance:
		g.maybeCompleteJoin()
	}
}

// removeMember drops a member without moving the group on.
func (g *classicGroup) removeMember(m *classicMember) {
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
func (g *classicGroup) memberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// rebalanceTimeout is the largest rebalance timeout of the members.
func (g *classicGroup) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// supportsProtocols is Kafka's GroupMetadata.supportsProtocols: an Empty
// group takes any non-empty protocol type and list; otherwise the type must
// match and one protocol must be supported by every member.
func (g *classicGroup) supportsProtocols(protocolType string, protocols []Protocol) bool {
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

func (g *classicGroup) supportedByAll(name string) bool {
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
func (g *classicGroup) selectProtocol() string {
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
func (m *classicMember) metadataFor(protocol string) []byte {
	return protocolMetadata(m.protocols, protocol)
}

// sameProtocols reports whether ps equals the member's protocols, names and
// metadata, in order.
func (m *classicMember) sameProtocols(ps []Protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b Protocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}
