package group

import (
	"fmt"
	"regexp"
	"time"

	"github.com/strata-broker/strata/tier/record"
)

// memberState is where a KIP-848 member is in reconciling its assignment
// with the target (Kafka's MemberState).
type memberState int8

const (
	memberStable     memberState = iota // owns its target (as far as released)
	memberUnrevoked                     // must give up partitions first
	memberUnreleased                    // waits for partitions others still own
)

// consumerGroup is a group of the KIP-848 consumer protocol (Kafka's
// ConsumerGroup): members heartbeat, the coordinator computes the target
// assignment with a server-side assignor and hands it out incrementally,
// revoking before assigning, so no member ever stops the world. All
// fields are guarded by mu.
type consumerGroup struct {
	groupCore

	epoch       int32 // group epoch: bumped by every membership or subscription change
	targetEpoch int32 // epoch of the target assignment
	assignor    string
	members     map[string]*consumerMember
	static      map[string]string      // instance id → member id
	target      map[string]Assignment  // member id → target assignment
	owners      map[idPartition]string // member that owns (or is revoking) each partition
	topicsSeen  string                 // fingerprint of the subscribed topics' metadata at the last target
	topicNames  map[[16]byte]string    // id → name, from the last target computation
	written     map[string][]byte      // records last written to __consumer_offsets (consumer_records.go), key → value

	// classicGeneration is the generation of the classic group this one
	// replaced: a deletion still removes its metadata record, and a
	// classic group replacing this one goes on from it.
	classicGeneration int32
}

// consumerMember is one member of a KIP-848 group.
type consumerMember struct {
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

// newConsumerGroup returns an empty consumer group.
func newConsumerGroup(c *Coordinator, sh *shard, name string) *consumerGroup {
	cg := &consumerGroup{
		assignor: AssignorUniform,
		members:  map[string]*consumerMember{},
		static:   map[string]string{},
		target:   map[string]Assignment{},
		owners:   map[idPartition]string{},
	}
	cg.initCore(c, sh, name)
	return cg
}

// toClassic is the empty classic group that replaces this empty group
// (see classicForJoin).
func (cg *consumerGroup) toClassic() *classicGroup {
	g := newClassicGroup(cg.c, cg.sh, cg.name)
	cg.handOver(&g.groupCore)
	g.generation = cg.classicGeneration
	g.protocolType = "consumer"
	return g
}

func (cg *consumerGroup) listing() Listing {
	return Listing{Group: cg.name, ProtocolType: "consumer", State: cg.stateString(), Type: "consumer"}
}

// stateString is the group's state as ListGroups and
// ConsumerGroupDescribe show it.
func (cg *consumerGroup) stateString() string {
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

func (cg *consumerGroup) isEmpty() bool { return len(cg.members) == 0 }

// validateOffsetCommit takes admin commits (epoch < 0) only while the
// group has no members, otherwise commits of a member at its current
// epoch (OffsetCommit v9+).
func (cg *consumerGroup) validateOffsetCommit(memberID string, _ *string, epoch int32, memberEpochs bool) error {
	if epoch < 0 && len(cg.members) == 0 {
		return nil
	}
	m := cg.members[memberID]
	switch {
	case m == nil:
		return ErrUnknownMemberID
	case !memberEpochs:
		return ErrUnsupportedVersion
	case epoch != m.epoch:
		return fmt.Errorf("%w: epoch %d, the member is at %d", ErrStaleMemberEpoch, epoch, m.epoch)
	}
	return nil
}

// validateTxnOffsetCommit takes commits without a member only while the
// group has no members, otherwise those of a member at its current epoch
// (Kafka answers ILLEGAL_GENERATION to transactional commits).
func (cg *consumerGroup) validateTxnOffsetCommit(memberID string, _ *string, epoch int32) error {
	if epoch < 0 && len(cg.members) == 0 {
		return nil
	}
	m := cg.members[memberID]
	switch {
	case m == nil:
		return ErrUnknownMemberID
	case epoch != m.epoch:
		return fmt.Errorf("%w: epoch %d, the member is at %d", ErrIllegalGeneration, epoch, m.epoch)
	}
	return nil
}

// validateOffsetFetch checks the member and its epoch when the fetch
// names them.
func (cg *consumerGroup) validateOffsetFetch(memberID string, memberEpoch int32) error {
	if memberEpoch < 0 {
		return nil
	}
	m := cg.members[memberID]
	if m == nil {
		return ErrUnknownMemberID
	}
	if m.epoch != memberEpoch {
		return fmt.Errorf("%w: epoch %d, the member is at %d", ErrStaleMemberEpoch, memberEpoch, m.epoch)
	}
	return nil
}

// validateOffsetDelete lets OffsetDelete in: the members' subscriptions
// are always known.
func (cg *consumerGroup) validateOffsetDelete() error { return nil }

func (cg *consumerGroup) validateDeleteGroup() error {
	if len(cg.members) > 0 {
		return ErrNonEmptyGroup
	}
	return nil
}

// subscribedTopics are the topics the members subscribe to, by name or
// regex.
func (cg *consumerGroup) subscribedTopics() map[string]bool {
	topics := cg.c.topicsByName()
	out := map[string]bool{}
	for _, m := range cg.members {
		for _, name := range m.topics {
			out[name] = true
		}
		for _, t := range m.resolve(topics) {
			out[t.Name] = true
		}
	}
	return out
}

// offsetExpiration: offsets of an empty group expire counted from when it
// emptied, otherwise those of unsubscribed topics from their commit.
func (cg *consumerGroup) offsetExpiration() (sinceEmpty, ok bool) {
	return len(cg.members) == 0, true
}

// tombstones delete the group's KIP-848 records, and the metadata record
// of the classic group it replaced, if that had one.
func (cg *consumerGroup) tombstones() []record.Record {
	var recs []record.Record
	if cg.classicGeneration > 0 {
		recs = append(recs, groupRecord(cg.name, nil))
	}
	return append(recs, cg.recordTombstones()...)
}

func (cg *consumerGroup) startSessions() {
	for _, m := range cg.members {
		cg.touch(m)
		if m.state == memberUnrevoked {
			cg.armRevokeTimer(m)
		}
	}
}

func (cg *consumerGroup) drop(error) {
	for _, m := range cg.members {
		if m.timer != nil {
			m.timer.Stop()
			m.timer = nil
		}
		m.stopRevokeTimer()
	}
	cg.removed = true
}

// touch restarts a member's session (group.consumer.session.timeout.ms).
func (cg *consumerGroup) touch(m *consumerMember) {
	d := cg.c.cfg.ConsumerSessionTimeout
	m.deadline = time.Now().Add(d)
	if m.timer != nil && !m.deadline.Before(m.timerAt) {
		return
	}
	if m.timer != nil {
		m.timer.Stop()
	}
	m.timerAt = m.deadline
	m.timer = time.AfterFunc(d, func() { cg.sessionExpired(m) })
}

func (cg *consumerGroup) sessionExpired(m *consumerMember) {
	cg.mu.Lock()
	defer cg.mu.Unlock()
	if cg.removed || cg.members[m.id] != m {
		return
	}
	if now := time.Now(); now.Before(m.deadline) {
		m.timerAt = m.deadline
		m.timer = time.AfterFunc(m.deadline.Sub(now), func() { cg.sessionExpired(m) })
		return
	}
	cg.c.log.Info("consumer group member session expired", "group", cg.name, "member", m.id)
	m.timer = nil
	cg.removeMember(m)
	cg.persistQuietly()
}

// armRevokeTimer fences the member if it has not revoked within its
// rebalance timeout.
func (cg *consumerGroup) armRevokeTimer(m *consumerMember) {
	m.stopRevokeTimer()
	seq := m.revokeSeq
	m.revokeTimer = time.AfterFunc(m.rebalanceTimeout, func() {
		cg.mu.Lock()
		defer cg.mu.Unlock()
		if cg.removed || cg.members[m.id] != m || m.revokeSeq != seq || m.state != memberUnrevoked {
			return
		}
		cg.c.log.Info("consumer group member did not revoke in time", "group", cg.name, "member", m.id)
		cg.removeMember(m)
		cg.persistQuietly()
	})
}

func (m *consumerMember) stopRevokeTimer() {
	m.revokeSeq++
	if m.revokeTimer != nil {
		m.revokeTimer.Stop()
		m.revokeTimer = nil
	}
}
