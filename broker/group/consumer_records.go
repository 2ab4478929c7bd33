package group

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"

	"github.com/strata-broker/strata/tier/record"
)

// KIP-848 group records in __consumer_offsets. kmsg v1.15.1 has no types
// for them, so this file encodes the minimal Kafka-compatible layouts of
// Kafka's coordinator record schemas (group-coordinator/src/main/resources/
// common/message/ConsumerGroup*.json, Kafka 3.8+ field order):
//
//	key   int16 version, then non-flexible fields (string = int16 length + bytes)
//	value int16 version 0, then flexible fields (compact strings and arrays,
//	      uvarint length+1, 0 = null) and an empty tagged-field section
//
//	key v3 ConsumerGroupMetadataKey{group} → {Epoch int32}
//	key v5 ConsumerGroupMemberMetadataKey{group, member} → {InstanceId?,
//	       RackId?, ClientId, ClientHost, SubscribedTopicNames [string],
//	       SubscribedTopicRegex?, ServerAssignor?, RebalanceTimeoutMs int32}
//	key v6 ConsumerGroupTargetAssignmentMetadataKey{group} → {AssignmentEpoch int32}
//	key v7 ConsumerGroupTargetAssignmentMemberKey{group, member} →
//	       {TopicPartitions [{TopicId uuid, Partitions [int32]}]}
//	key v8 ConsumerGroupCurrentMemberAssignmentKey{group, member} →
//	       {MemberEpoch int32, PreviousMemberEpoch int32, State int8,
//	       AssignedPartitions [..], PartitionsPendingRevocation [..]}
//
// A null value deletes the record's subject. Key v4 (subscription
// metadata) is not written: the coordinator takes topic metadata from the
// cluster metadata on every heartbeat. A static member that left
// temporarily (epoch -2) keeps its epoch before leaving in
// PreviousMemberEpoch.
const (
	cgMetadataKey       = 3
	cgMemberKey         = 5
	cgTargetMetadataKey = 6
	cgTargetMemberKey   = 7
	cgCurrentKey        = 8
)

// Kafka's MemberState codes in the current-assignment record.
var memberStateCodes = map[memberState]int8{memberStable: 1, memberUnrevoked: 2, memberUnreleased: 3}

// consumerRecords is the last value of every KIP-848 record of one group
// seen while loading (nil value: tombstone).
type consumerRecords struct {
	epoch, targetEpoch []byte
	members            map[string][]byte
	targets            map[string][]byte
	current            map[string][]byte
}

func cgKey(version int16, group string, member *string) []byte {
	k := kbin.AppendInt16(nil, version)
	k = kbin.AppendString(k, group)
	if member != nil {
		k = kbin.AppendString(k, *member)
	}
	return k
}

func valueHeader() []byte { return kbin.AppendInt16(nil, 0) }

func endValue(v []byte) []byte { return kbin.AppendUvarint(v, 0) } // no tagged fields

func appendAssignment(v []byte, a Assignment) []byte {
	ids := slices.SortedFunc(maps.Keys(a), func(x, y [16]byte) int { return bytes.Compare(x[:], y[:]) })
	v = kbin.AppendCompactArrayLen(v, len(ids))
	for _, id := range ids {
		v = kbin.AppendUuid(v, id)
		ps := slices.Sorted(slices.Values(a[id]))
		v = kbin.AppendCompactArrayLen(v, len(ps))
		for _, p := range ps {
			v = kbin.AppendInt32(v, p)
		}
		v = kbin.AppendUvarint(v, 0)
	}
	return v
}

func readAssignment(r *kbin.Reader) Assignment {
	a := Assignment{}
	n := r.CompactArrayLen()
	for i := int32(0); i < n && r.Ok(); i++ {
		id := r.Uuid()
		np := r.CompactArrayLen()
		for j := int32(0); j < np && r.Ok(); j++ {
			a.add(id, r.Int32())
		}
		skipTags(r)
	}
	return a
}

// skipTags reads past a tagged-field section.
func skipTags(r *kbin.Reader) {
	for n := r.Uvarint(); n > 0 && r.Ok(); n-- {
		r.Uvarint()
		r.Span(int(r.Uvarint()))
	}
}

// encodeRecords returns every record (key → value) describing the group's
// current KIP-848 state.
func (cg *consumerGroup) encodeRecords(group string) map[string][]byte {
	out := map[string][]byte{}
	out[string(cgKey(cgMetadataKey, group, nil))] = endValue(kbin.AppendInt32(valueHeader(), cg.epoch))
	out[string(cgKey(cgTargetMetadataKey, group, nil))] = endValue(kbin.AppendInt32(valueHeader(), cg.targetEpoch))
	for id, m := range cg.members {
		v := valueHeader()
		v = kbin.AppendCompactNullableString(v, m.instanceID)
		v = kbin.AppendCompactNullableString(v, m.rackID)
		v = kbin.AppendCompactString(v, m.clientID)
		v = kbin.AppendCompactString(v, m.clientHost)
		v = kbin.AppendCompactArrayLen(v, len(m.topics))
		for _, t := range m.topics {
			v = kbin.AppendCompactString(v, t)
		}
		v = kbin.AppendCompactNullableString(v, m.regex)
		var assignor *string
		if m.assignor != "" {
			assignor = &m.assignor
		}
		v = kbin.AppendCompactNullableString(v, assignor)
		v = kbin.AppendInt32(v, int32(m.rebalanceTimeout/time.Millisecond))
		out[string(cgKey(cgMemberKey, group, &id))] = endValue(v)

		out[string(cgKey(cgTargetMemberKey, group, &id))] = endValue(appendAssignment(valueHeader(), cg.target[id]))

		prev := m.prevEpoch
		if m.epoch == -2 {
			prev = m.leftEpoch
		}
		v = kbin.AppendInt32(valueHeader(), m.epoch)
		v = kbin.AppendInt32(v, prev)
		v = kbin.AppendInt8(v, memberStateCodes[m.state])
		v = appendAssignment(v, m.assigned)
		v = appendAssignment(v, m.revoking)
		out[string(cgKey(cgCurrentKey, group, &id))] = endValue(v)
	}
	return out
}

// persist writes the records of the group's KIP-848 state that
// changed since the last successful write (tombstones for removed
// members), in one batch. A failed write is retried by the next call.
func (cg *consumerGroup) persist() error {
	want := cg.encodeRecords(cg.name)
	var recs []record.Record
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if old, ok := cg.written[k]; !ok || !bytes.Equal(old, want[k]) {
			recs = append(recs, record.Record{Key: []byte(k), Value: want[k]})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cg.written)) {
		if _, ok := want[k]; !ok {
			recs = append(recs, record.Record{Key: []byte(k)})
		}
	}
	if len(recs) == 0 {
		return nil
	}
	if err := cg.sh.append(recs, time.Now()); err != nil {
		return err
	}
	cg.written = want
	return nil
}

// recordTombstones delete every KIP-848 record written for the group.
func (cg *consumerGroup) recordTombstones() []record.Record {
	var recs []record.Record
	for _, k := range slices.Sorted(maps.Keys(cg.written)) {
		recs = append(recs, record.Record{Key: []byte(k)})
	}
	return recs
}

// applyConsumer folds one KIP-848 record into the loaded state; other key
// versions are skipped.
func (st *loaded) applyConsumer(key, value []byte) {
	r := &kbin.Reader{Src: key}
	version := r.Int16()
	group := r.String()
	if !r.Ok() {
		return
	}
	cr := st.consumer[group]
	if cr == nil {
		cr = &consumerRecords{members: map[string][]byte{}, targets: map[string][]byte{}, current: map[string][]byte{}}
		st.consumer[group] = cr
	}
	value = bytes.Clone(value)
	switch version {
	case cgMetadataKey:
		cr.epoch = value
		if value == nil { // the group is gone: forget its members too
			delete(st.consumer, group)
		}
	case cgTargetMetadataKey:
		cr.targetEpoch = value
	case cgMemberKey, cgTargetMemberKey, cgCurrentKey:
		member := r.String()
		if !r.Ok() {
			return
		}
		m := map[int16]map[string][]byte{cgMemberKey: cr.members, cgTargetMemberKey: cr.targets, cgCurrentKey: cr.current}[version]
		if value == nil {
			delete(m, member)
		} else {
			m[member] = value
		}
	}
}

// valueReader opens a record value of version 0, or reports it unusable.
func valueReader(v []byte) (*kbin.Reader, bool) {
	if len(v) < 2 || binary.BigEndian.Uint16(v) != 0 {
		return nil, false
	}
	return &kbin.Reader{Src: v[2:]}, true
}

// restoreConsumerGroup rebuilds a KIP-848 group from its records: members keep
// their ids, epochs and assignments (their sessions restart when the
// partition is published), so they go on heartbeating after a restart.
func restoreConsumerGroup(c *Coordinator, sh *shard, name string, cr *consumerRecords) (*consumerGroup, error) {
	r, ok := valueReader(cr.epoch)
	if !ok {
		return nil, fmt.Errorf("group: %s: no consumer group metadata record", name)
	}
	cg := newConsumerGroup(c, sh, name)
	cg.epoch = r.Int32()
	if r, ok := valueReader(cr.targetEpoch); ok {
		cg.targetEpoch = r.Int32()
	}
	votes := map[string]int{}
	for id, v := range cr.members {
		r, ok := valueReader(v)
		if !ok {
			continue
		}
		m := &consumerMember{id: id, assigned: Assignment{}, revoking: Assignment{}}
		m.instanceID = r.CompactNullableString()
		m.rackID = r.CompactNullableString()
		m.clientID = r.CompactString()
		m.clientHost = r.CompactString()
		for n := r.CompactArrayLen(); n > 0 && r.Ok(); n-- {
			m.topics = append(m.topics, r.CompactString())
		}
		if m.regex = r.CompactNullableString(); m.regex != nil {
			m.re = compileSubscription(*m.regex)
		}
		if a := r.CompactNullableString(); a != nil {
			m.assignor = *a
			votes[m.assignor]++
		}
		m.rebalanceTimeout = time.Duration(r.Int32()) * time.Millisecond
		if !r.Ok() {
			continue
		}
		if r, ok := valueReader(cr.targets[id]); ok {
			if a := readAssignment(r); r.Ok() {
				cg.target[id] = a
			}
		}
		if r, ok := valueReader(cr.current[id]); ok {
			epoch, prev, state := r.Int32(), r.Int32(), r.Int8()
			assigned, revoking := readAssignment(r), readAssignment(r)
			if r.Ok() {
				m.epoch, m.prevEpoch, m.assigned, m.revoking = epoch, prev, assigned, revoking
				if epoch == -2 {
					m.leftEpoch = prev
				}
				for s, code := range memberStateCodes {
					if code == state {
						m.state = s
					}
				}
			}
		}
		cg.members[id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = id
		}
	}
	if votes[AssignorRange] > votes[AssignorUniform] {
		cg.assignor = AssignorRange
	}
	for _, m := range cg.members {
		cg.own(m)
	}
	topics := c.topicsByName()
	cg.topicsSeen = cg.fingerprint(topics)
	cg.topicNames = map[[16]byte]string{}
	for _, t := range topics {
		cg.topicNames[t.ID] = t.Name
	}
	cg.written = cg.encodeRecords(name)
	return cg, nil
}

// persistQuietly writes the KIP-848 state from a timer, where no request
// can carry the error; the next heartbeat's write retries.
func (cg *consumerGroup) persistQuietly() {
	if err := cg.persist(); err != nil {
		cg.c.log.Warn("write consumer group records", "group", cg.name, "err", err)
	}
}

// compileSubscription compiles a subscription regex to match whole topic
// names; nil if it is invalid.
func compileSubscription(expr string) *regexp.Regexp {
	re, err := regexp.Compile("^(?:" + expr + ")$")
	if err != nil {
		return nil
	}
	return re
}
