package handler

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TierTag is the tag number of Strata's tagged field on DescribeLogDirs
// (v2+, the flexible versions). A request carrying it asks for each
// partition's tier state, which the answer carries under the same tag on
// each partition. It is how one broker's console learns what only the
// others know (their copies' bytes and copy lag) over the inter-broker
// path it already has. Kafka's clients never send it and skip it in an
// answer, as they skip every tag they do not know; the number is far
// above any Kafka assigns.
const TierTag uint32 = 0x53545254

// ReplicaTier is one replica's tier state as TierTag carries it.
type ReplicaTier struct {
	Leader          bool  // the broker leads the partition
	Tiered          bool  // remote.storage.enable
	LocalStart      int64 // the local log's start
	RemoteStart     int64 // first tiered offset (-1: nothing tiered)
	RemoteEnd       int64 // last tiered offset (-1: nothing tiered)
	RemoteBytes     int64 // bytes of the finished copies
	CopyLagSegments int64 // sealed, committed local segments not yet copied (leader)
	CopyLagBytes    int64
	LastError       string // the last copy error ("" after a success)
}

// Append sets t as the TierTag of tags.
func (t ReplicaTier) Append(tags *kmsg.Tags) {
	var flags int64
	if t.Leader {
		flags |= 1
	}
	if t.Tiered {
		flags |= 2
	}
	b := make([]byte, 0, 32+len(t.LastError))
	for _, v := range []int64{flags, t.LocalStart, t.RemoteStart, t.RemoteEnd, t.RemoteBytes, t.CopyLagSegments, t.CopyLagBytes, int64(len(t.LastError))} {
		b = binary.AppendVarint(b, v)
	}
	tags.Set(TierTag, append(b, t.LastError...))
}

// errTierTag is a TierTag value that does not parse.
var errTierTag = errors.New("malformed tier tag")

// ParseReplicaTier reads the TierTag of tags; false when there is none.
func ParseReplicaTier(tags kmsg.Tags) (ReplicaTier, bool, error) {
	var (
		raw   []byte
		found bool
	)
	tags.Each(func(k uint32, v []byte) {
		if k == TierTag {
			raw, found = v, true
		}
	})
	if !found {
		return ReplicaTier{}, false, nil
	}
	var vals [8]int64
	for i := range vals {
		v, n := binary.Varint(raw)
		if n <= 0 {
			return ReplicaTier{}, true, fmt.Errorf("field %d: %w", i, errTierTag)
		}
		vals[i], raw = v, raw[n:]
	}
	if vals[7] < 0 || vals[7] != int64(len(raw)) {
		return ReplicaTier{}, true, fmt.Errorf("last error of %d bytes in %d: %w", vals[7], len(raw), errTierTag)
	}
	return ReplicaTier{Leader: vals[0]&1 != 0, Tiered: vals[0]&2 != 0, LocalStart: vals[1], RemoteStart: vals[2], RemoteEnd: vals[3],
		RemoteBytes: vals[4], CopyLagSegments: vals[5], CopyLagBytes: vals[6], LastError: string(raw)}, true, nil
}

// hasTag reports whether tags carry key.
func hasTag(tags kmsg.Tags, key uint32) bool {
	found := false
	tags.Each(func(k uint32, _ []byte) { found = found || k == key })
	return found
}
