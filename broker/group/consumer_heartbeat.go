package group

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"
)

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
	create := createNone
	if join {
		create = createConsumer
	}
	err := c.withGroup(req.Group, create, func(g group) error {
		cg, err := c.consumerForHeartbeat(g, join)
		if err != nil {
			return err
		}
		err = cg.heartbeat(&req, &res)
		if perr := cg.persist(); perr != nil && err == nil {
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

// heartbeat is the body of ConsumerHeartbeat with the group locked.
func (cg *consumerGroup) heartbeat(req *ConsumerHeartbeatRequest, res *ConsumerHeartbeatResult) error {
	var m *consumerMember
	var err error
	switch req.MemberEpoch {
	case -1, -2:
		return cg.leave(req, res)
	case 0:
		m, err = cg.join(req)
	default:
		m, err = cg.knownMember(req)
	}
	if err != nil {
		return err
	}
	if cg.updateSubscription(m, req) {
		cg.epoch++
	}
	cg.touch(m)
	topics := cg.c.topicsByName()
	if fp := cg.fingerprint(topics); fp != cg.topicsSeen && cg.targetEpoch == cg.epoch {
		cg.epoch++ // topic metadata changed (partitions added, topics created or deleted)
	}
	if cg.epoch > cg.targetEpoch {
		cg.computeTarget(topics)
	}
	cg.reconcile(m, req.Owned)
	full := req.MemberEpoch == 0 || req.RebalanceTimeout >= 0 && (req.SubscribedTopics != nil || req.SubscribedRegex != nil) && req.Owned != nil
	res.MemberID, res.MemberEpoch = m.id, m.epoch
	if full || !m.assigned.equal(m.sent) {
		res.Assignment = m.assigned.clone()
		m.sent = m.assigned.clone()
	}
	return nil
}

// join adds a member (epoch 0): a new one, a static member taking
// over its instance id's place after a temporary leave, or a known member
// starting over (after being fenced), which releases what it owned.
func (cg *consumerGroup) join(req *ConsumerHeartbeatRequest) (*consumerMember, error) {
	m := cg.members[req.MemberID]
	var old *consumerMember
	if req.InstanceID != nil {
		if oid, ok := cg.static[*req.InstanceID]; ok && oid != req.MemberID {
			if old = cg.members[oid]; old != nil && old.epoch != -2 {
				return nil, fmt.Errorf("%w: instance %s is still in use by member %s", ErrUnreleasedInstanceID, *req.InstanceID, oid)
			}
		}
	}
	switch {
	case m != nil:
		cg.disown(m)
		m.assigned, m.revoking, m.sent = Assignment{}, Assignment{}, nil
		m.epoch, m.prevEpoch, m.state = 0, 0, memberStable
		m.stopRevokeTimer()
	case old != nil:
		// A restarted static member: same place, same assignment, new id.
		cg.disown(old)
		delete(cg.members, old.id)
		cg.target[req.MemberID] = cg.target[old.id]
		delete(cg.target, old.id)
		m = old
		m.id, m.epoch, m.sent = req.MemberID, m.leftEpoch, nil
		cg.own(m)
	default:
		if len(cg.members) >= cg.c.cfg.MaxSize {
			return nil, ErrGroupMaxSize
		}
		m = &consumerMember{id: req.MemberID, assigned: Assignment{}, revoking: Assignment{}}
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

// knownMember finds the member of a regular heartbeat and checks its
// epoch (Kafka's throwIfMemberEpochIsInvalid): a member one epoch behind
// is accepted while it owns no more than it is assigned, as it may not
// have seen its new assignment yet.
func (cg *consumerGroup) knownMember(req *ConsumerHeartbeatRequest) (*consumerMember, error) {
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

// leave handles epochs -1 (leave) and -2 (a static member leaves
// for a restart: it keeps its place and partitions until its session
// expires or its instance id rejoins).
func (cg *consumerGroup) leave(req *ConsumerHeartbeatRequest, res *ConsumerHeartbeatResult) error {
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
		m.stopRevokeTimer()
		return nil
	}
	res.MemberEpoch = -1
	cg.removeMember(m)
	return nil
}

// updateSubscription applies the request's changes to a member and
// reports whether its subscription or assignor changed.
func (cg *consumerGroup) updateSubscription(m *consumerMember, req *ConsumerHeartbeatRequest) bool {
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

// removeMember removes a member that left, expired or was fenced; the
// others reconcile to a new target on their next heartbeats.
func (cg *consumerGroup) removeMember(m *consumerMember) {
	cg.disown(m)
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	m.stopRevokeTimer()
	cg.epoch++
	if len(cg.members) == 0 {
		cg.stateTime = time.Now()
	}
}
