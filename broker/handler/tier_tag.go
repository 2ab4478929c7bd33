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
// each log dir: one ReplicaTier per partition of the dir, in the dir's
// order (one tag per dir rather than per partition keeps an answer of
// 100,000 partitions cheap to decode). It is how one broker's console
// learns what only the others know (their copies' bytes and copy lag)
// over the inter-broker path it already has. Kafka's clients never send
// it and skip it in an answer, as they skip every tag they do not know;
// the number is far above any Kafka assigns.
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

// AppendTo appends t's encoding to dst.
func (t ReplicaTier) AppendTo(dst []byte) []byte {
	var flags int64
	if t.Leader {
		flags |= 1
	}
	if t.Tiered {
		flags |= 2
	}
	for _, v := range [...]int64{flags, t.LocalStart, t.RemoteStart, t.RemoteEnd, t.RemoteBytes, t.CopyLagSegments, t.CopyLagBytes, int64(len(t.LastError))} {
		dst = binary.AppendVarint(dst, v)
	}
	return append(dst, t.LastError...)
}

// errTierTag is a TierTag value that does not parse.
var errTierTag = errors.New("malformed tier tag")

// readReplicaTier decodes one ReplicaTier from the front of b and
// returns the rest.
func readReplicaTier(b []byte) (ReplicaTier, []byte, error) {
	var vals [8]int64
	for i := range vals {
		v, n := binary.Varint(b)
		if n <= 0 {
			return ReplicaTier{}, nil, fmt.Errorf("field %d: %w", i, errTierTag)
		}
		vals[i], b = v, b[n:]
	}
	if vals[7] < 0 || vals[7] > int64(len(b)) {
		return ReplicaTier{}, nil, fmt.Errorf("last error of %d bytes in %d: %w", vals[7], len(b), errTierTag)
	}
	return ReplicaTier{Leader: vals[0]&1 != 0, Tiered: vals[0]&2 != 0, LocalStart: vals[1], RemoteStart: vals[2], RemoteEnd: vals[3],
		RemoteBytes: vals[4], CopyLagSegments: vals[5], CopyLagBytes: vals[6], LastError: string(b[:vals[7]])}, b[vals[7]:], nil
}

// ParseReplicaTiers reads a log dir's TierTag: the tier state of each of
// its partitions, in the dir's order; false when the dir has none.
func ParseReplicaTiers(dir *kmsg.DescribeLogDirsResponseDir) ([]ReplicaTier, bool, error) {
	raw, found := tagValue(dir.UnknownTags, TierTag)
	if !found {
		return nil, false, nil
	}
	n := 0
	for _, t := range dir.Topics {
		n += len(t.Partitions)
	}
	out := make([]ReplicaTier, 0, n)
	for range n {
		rt, rest, err := readReplicaTier(raw)
		if err != nil {
			return nil, true, fmt.Errorf("partition %d of %d: %w", len(out), n, err)
		}
		out, raw = append(out, rt), rest
	}
	if len(raw) != 0 {
		return nil, true, fmt.Errorf("%d bytes after %d partitions: %w", len(raw), n, errTierTag)
	}
	return out, true, nil
}

// tagValue is the value of tags' key; false when there is none.
func tagValue(tags kmsg.Tags, key uint32) ([]byte, bool) {
	var (
		val   []byte
		found bool
	)
	tags.Each(func(k uint32, v []byte) {
		if k == key {
			val, found = v, true
		}
	})
	return val, found
}
