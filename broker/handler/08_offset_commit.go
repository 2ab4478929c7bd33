package handler

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
)

// commitOffsets pools the offset slices of OffsetCommit requests: the
// coordinator keeps none of the slice once CommitOffsets returns.
var commitOffsets = sync.Pool{New: func() any { return new([]group.CommitOffset) }}

// putCommitOffsets returns used (grown from *p) to commitOffsets, unless it
// grew past maxPooledOffsets.
func putCommitOffsets(p *[]group.CommitOffset, used []group.CommitOffset) {
	if cap(used) > maxPooledOffsets {
		return
	}
	clear(used)
	*p = used[:0]
	commitOffsets.Put(p)
}

// maxPooledOffsets bounds the slices commitOffsets keeps.
const maxPooledOffsets = 1024

// OffsetCommit: v0-9
//
// Behavior:
// * Offsets are records in __consumer_offsets (one batch per request),
//   keyed as Kafka keys them; metadata strings and leader epochs
//   round-trip through OffsetFetch.
// * A commit is answered once the batch is replicated (the partition's high
//   watermark passed it, as with acks=all); not within
//   offsets.commit.timeout.ms (5 s) it is COORDINATOR_NOT_AVAILABLE, after a
//   loss of leadership NOT_COORDINATOR, and the offsets stay unchanged.
// * Generation -1 with an empty member id commits for a group used only
//   for offsets (Empty or new); otherwise the member and generation are
//   checked: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID,
//   and REBALANCE_IN_PROGRESS while the group awaits its assignment. A
//   generation for a group that does not exist is ILLEGAL_GENERATION, from
//   v9 on GROUP_ID_NOT_FOUND, as in Kafka.
// * Partitions the metadata does not know are UNKNOWN_TOPIC_OR_PARTITION;
//   metadata longer than offset.metadata.max.bytes (default 4096) is
//   OFFSET_METADATA_TOO_LARGE.
// * A null metadata string is stored as "" (as Kafka does).
// * The group needs READ (GROUP_AUTHORIZATION_FAILED for every
//   partition), each topic READ (TOPIC_AUTHORIZATION_FAILED).
//
// Version notes:
// * v0: no generation (offsets-only); v1: per-partition commit timestamp
// * v2-v4: retention time: those offsets expire at commit + retention
// * v5+: offsets expire offsets.retention.minutes after the group empties
// * v6: leader epoch (KIP-320); v7: instance id; v8: flexible
// * v9: the generation is the member epoch for KIP-848 groups
//   (STALE_MEMBER_EPOCH); their members must commit with v9+
//   (UNSUPPORTED_VERSION otherwise)

func handleOffsetCommit(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.OffsetCommitRequest)
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	now := time.Now().UnixMilli()
	cr := group.CommitRequest{Group: r.Group, MemberID: r.MemberID, InstanceID: r.InstanceID, Generation: r.Generation, MemberEpochs: r.Version >= 9}
	if r.Version == 0 {
		cr.Generation, cr.MemberID = -1, ""
	}
	expire := int64(-1)
	if r.Version >= 2 && r.Version <= 4 && r.RetentionTimeMillis != -1 {
		expire = now + r.RetentionTimeMillis
	}
	n := 0
	for _, rt := range r.Topics {
		n += len(rt.Partitions)
	}
	offsets := commitOffsets.Get().(*[]group.CommitOffset)
	cr.Offsets = slices.Grow((*offsets)[:0], n)
	defer putCommitOffsets(offsets, cr.Offsets)
	resp.Topics = make([]kmsg.OffsetCommitResponseTopic, 0, len(r.Topics))
	parts := make([]kmsg.OffsetCommitResponseTopicPartition, 0, n) // every topic's, in one allocation
	groupDenied := !env.allowedGroup(req, aclRead, r.Group)
	for _, rt := range r.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		first := len(parts)
		t, known := env.Cache.Topic(rt.Topic) // one lookup for all its partitions
		denied := kerr.GroupAuthorizationFailed.Code
		if !groupDenied {
			denied = 0
			if !env.allowedTopic(req, aclRead, rt.Topic) {
				denied = kerr.TopicAuthorizationFailed.Code
			}
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			if denied != 0 {
				sp.ErrorCode = denied
			} else if _, ok := t.Partitions[rp.Partition]; !known || !ok {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				o := group.Offset{Offset: rp.Offset, LeaderEpoch: rp.LeaderEpoch, CommitTimestamp: now, ExpireTimestamp: expire}
				if r.Version == 1 && rp.Timestamp != -1 {
					o.CommitTimestamp = rp.Timestamp
				}
				if r.Version < 6 {
					o.LeaderEpoch = -1
				}
				if rp.Metadata != nil {
					o.Metadata = *rp.Metadata
				}
				cr.Offsets = append(cr.Offsets, group.CommitOffset{TopicPartition: group.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}, Offset: o})
			}
			parts = append(parts, sp)
		}
		st.Partitions = parts[first:len(parts):len(parts)]
		resp.Topics = append(resp.Topics, st)
	}
	if len(cr.Offsets) == 0 {
		return Result{Resp: resp}, nil
	}
	// The offsets went in response order, skipping the partitions already
	// answered with an error.
	errs := env.Groups.CommitOffsets(cr)
	for i := range parts {
		if parts[i].ErrorCode == 0 {
			parts[i].ErrorCode = groupErrorCode(errs[0])
			errs = errs[1:]
		}
	}
	return Result{Resp: resp}, nil
}
