package group

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The target assignment of a KIP-848 group and each member's steps
// towards it.

// computeTarget runs the assignor over the members' subscriptions.
func (cg *consumerGroup) computeTarget(topics map[string]TopicInfo) {
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
	cg.c.log.Info("computed consumer group target assignment", "group", cg.name, "epoch", cg.epoch, "assignor", cg.assignor, "members", len(ids))
}

// resolve returns the existing topics the member subscribes to, by name
// or by regex, sorted by name. A regex is matched against every topic,
// internal ones such as __consumer_offsets included, as Kafka's
// coordinator resolves it against the whole metadata image.
func (m *consumerMember) resolve(topics map[string]TopicInfo) []TopicInfo {
	var out []TopicInfo
	for _, name := range m.topics {
		if t, ok := topics[name]; ok {
			out = append(out, t)
		}
	}
	if m.re != nil {
		for name, t := range topics {
			if !slices.Contains(m.topics, name) && m.re.MatchString(name) {
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
func (cg *consumerGroup) reconcile(m *consumerMember, owned Assignment) {
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
	cg.disown(m)
	if revoke.count() > 0 {
		m.assigned, m.revoking, m.state = keep, revoke, memberUnrevoked
		cg.armRevokeTimer(m)
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
		m.stopRevokeTimer()
	}
	cg.own(m)
}

func (cg *consumerGroup) own(m *consumerMember) {
	set := func(id [16]byte, p int32) { cg.owners[idPartition{id, p}] = m.id }
	m.assigned.each(set)
	m.revoking.each(set)
}

func (cg *consumerGroup) disown(m *consumerMember) {
	drop := func(id [16]byte, p int32) {
		if k := (idPartition{id, p}); cg.owners[k] == m.id {
			delete(cg.owners, k)
		}
	}
	m.assigned.each(drop)
	m.revoking.each(drop)
}
