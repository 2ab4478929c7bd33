package group

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Description is a group as DescribeGroups shows it.
type Description struct {
	Group        string
	State        string
	ProtocolType string
	Protocol     string
	Members      []MemberDescription
}

// MemberDescription is one member as DescribeGroups shows it. Metadata and
// Assignment are filled only while the group is Stable, as in Kafka.
type MemberDescription struct {
	MemberID   string
	InstanceID *string
	ClientID   string
	ClientHost string
	Metadata   []byte
	Assignment []byte
}

// Describe describes a group; an unknown group is described as Dead with
// no error, as Kafka does.
func (c *Coordinator) Describe(groupID string) (Description, error) {
	d := Description{Group: groupID, State: Dead.String()}
	err := c.withGroup(groupID, createNone, func(gr group) error {
		g, ok := gr.(*classicGroup)
		if !ok {
			return nil // described by ConsumerGroupDescribe
		}
		d.State = g.state.String()
		d.ProtocolType = g.protocolType
		d.Protocol = g.protocol
		for _, id := range g.memberIDs() {
			m := g.members[id]
			md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
			if g.state == Stable {
				md.Metadata = m.metadataFor(g.protocol)
				md.Assignment = m.assignment
			}
			d.Members = append(d.Members, md)
		}
		return nil
	})
	if errors.Is(err, ErrGroupNotFound) {
		err = nil
	}
	return d, err
}

// Listing is a group as ListGroups shows it.
type Listing struct {
	Group        string
	ProtocolType string
	State        string
	Type         string // "classic" or "consumer" (KIP-848)
}

// List lists the groups of every loaded partition whose state and type
// match the filters (case-insensitive; empty filters match everything),
// sorted by name. The error is ErrLoadInProgress when some partition is
// still loading (the listing is then partial).
func (c *Coordinator) List(states, types []string) ([]Listing, error) {
	groups, loading := c.allGroups()
	match := func(filter []string, v string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, v) {
				return true
			}
		}
		return false
	}
	var out []Listing
	for _, g := range groups {
		gc := g.core()
		gc.mu.Lock()
		l := g.listing()
		removed := gc.removed
		gc.mu.Unlock()
		if !removed && match(states, l.State) && match(types, l.Type) {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	var err error
	if loading {
		err = ErrLoadInProgress
	}
	return out, err
}

// DeleteGroup deletes an empty group with its offsets (DeleteGroups).
func (c *Coordinator) DeleteGroup(groupID string) error {
	return c.withGroup(groupID, createNone, func(g group) error {
		if err := g.validateDeleteGroup(); err != nil {
			return err
		}
		offsets := g.core().offsets
		all := make([]TopicPartition, 0, len(offsets))
		for tp := range offsets {
			all = append(all, tp)
		}
		return removeOffsets(g, all, true)
	})
}

// ConsumerGroupDescription is a KIP-848 group as ConsumerGroupDescribe
// shows it.
type ConsumerGroupDescription struct {
	Group           string
	State           string
	Epoch           int32
	AssignmentEpoch int32
	Assignor        string
	Members         []ConsumerMemberDescription
}

// ConsumerMemberDescription is one member of a KIP-848 group.
type ConsumerMemberDescription struct {
	MemberID         string
	InstanceID       *string
	RackID           *string
	MemberEpoch      int32
	ClientID         string
	ClientHost       string
	SubscribedTopics []string
	SubscribedRegex  *string
	Assignment       []TopicAssignment
	Target           []TopicAssignment
}

// TopicAssignment is one topic's partitions of an assignment.
type TopicAssignment struct {
	ID         [16]byte
	Name       string
	Partitions []int32
}

// DescribeConsumerGroup describes a KIP-848 group; ErrGroupNotFound for a
// missing or classic group.
func (c *Coordinator) DescribeConsumerGroup(groupID string) (ConsumerGroupDescription, error) {
	d := ConsumerGroupDescription{Group: groupID}
	names := map[[16]byte]string{}
	for name, t := range c.topicsByName() {
		names[t.ID] = name
	}
	err := c.withGroup(groupID, createNone, func(g group) error {
		cg, ok := g.(*consumerGroup)
		if !ok {
			return fmt.Errorf("%w: %s is not a consumer group", ErrGroupNotFound, groupID)
		}
		d.State, d.Epoch, d.AssignmentEpoch, d.Assignor = cg.stateString(), cg.epoch, cg.targetEpoch, cg.assignor
		ids := make([]string, 0, len(cg.members))
		for id := range cg.members {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		list := func(a Assignment) []TopicAssignment {
			out := make([]TopicAssignment, 0, len(a))
			for id, ps := range a {
				name := names[id]
				if name == "" {
					name = cg.topicNames[id]
				}
				out = append(out, TopicAssignment{ID: id, Name: name, Partitions: slices.Clone(ps)})
			}
			sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
			return out
		}
		for _, id := range ids {
			m := cg.members[id]
			d.Members = append(d.Members, ConsumerMemberDescription{
				MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, MemberEpoch: m.epoch,
				ClientID: m.clientID, ClientHost: m.clientHost,
				SubscribedTopics: slices.Clone(m.topics), SubscribedRegex: m.regex,
				Assignment: list(m.assigned), Target: list(cg.target[id]),
			})
		}
		return nil
	})
	return d, err
}
