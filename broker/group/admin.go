package group

import (
	"errors"
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
func (c *Coordinator) Describe(group string) (Description, error) {
	d := Description{Group: group, State: Dead.String()}
	err := c.withGroup(group, false, func(g *Group) error {
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
	Type         string // "classic"
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
		g.mu.Lock()
		l := Listing{Group: g.name, ProtocolType: g.protocolType, State: g.state.String(), Type: "classic"}
		removed := g.removed
		g.mu.Unlock()
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

// DeleteGroup deletes an Empty group with its offsets (DeleteGroups).
func (c *Coordinator) DeleteGroup(group string) error {
	return c.withGroup(group, false, func(g *Group) error {
		if g.state != Empty {
			return ErrNonEmptyGroup
		}
		all := make([]TopicPartition, 0, len(g.offsets))
		for tp := range g.offsets {
			all = append(all, tp)
		}
		return g.removeOffsets(all, true)
	})
}
