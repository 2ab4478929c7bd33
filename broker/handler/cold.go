package handler

import (
	"context"
	"sync"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/broker/wire"
	"github.com/strata-broker/strata/tier/remote"
	"github.com/strata-broker/strata/tier/segment"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readRegion reads a partition for Fetch at loc (partition.Locate): from
// the tier when it is cold, else from the local log with read. The region
// is nil when there is nothing to send.
func readRegion(ctx context.Context, p *partition.Partition, read func(int64, int) (segment.Slice, error), loc partition.Location, offset int64, limit int, cold coldReads) (wire.Region, int64, error) {
	if loc.Cold() {
		s, ok := cold.take(p, offset, limit)
		if !ok {
			var err error
			if s, err = p.ReadCold(ctx, loc, offset, limit); err != nil {
				return nil, 0, err
			}
		}
		if s.Len == 0 {
			s.Release()
			return nil, 0, nil
		}
		return s, s.Len, nil
	}
	s, err := read(offset, limit)
	if err != nil || s.Len == 0 {
		return nil, 0, err
	}
	return sliceRegion{s}, s.Len, nil
}

// coldKey names one partition's read in a fetch.
type coldKey struct {
	p      *partition.Partition
	offset int64
}

// coldRead is one cold partition of a fetch build: where its offset is, or
// why that is unknown, and the read made ahead (Len 0: none).
type coldRead struct {
	loc   partition.Location
	err   error
	limit int // the partition's max bytes, for the read ahead
	s     remote.Slice
}

// coldReads are the partitions of a fetch build that locateCold found
// cold (or failed to locate), located once for the whole build; the build
// owns the reads made ahead and releases what it did not take.
type coldReads map[coldKey]*coldRead

// locate is where p's read at offset goes: locateCold's answer, or, for a
// partition it found hot, partition.Locate again, which costs no I/O for a
// hot offset.
func (c coldReads) locate(ctx context.Context, p *partition.Partition, offset int64) (partition.Location, error) {
	if r, ok := c[coldKey{p, offset}]; ok {
		return r.loc, r.err
	}
	return p.Locate(ctx, offset)
}

// take hands over the read made ahead of p at offset if it fits in limit
// (the build's limit may be below the partition's when the response is
// nearly full); a read that does not fit is released.
func (c coldReads) take(p *partition.Partition, offset int64, limit int) (remote.Slice, bool) {
	r, ok := c[coldKey{p, offset}]
	if !ok || r.s.Len == 0 {
		return remote.Slice{}, false
	}
	s := r.s
	r.s = remote.Slice{}
	if s.Len > int64(limit) {
		s.Release()
		return remote.Slice{}, false
	}
	return s, true
}

// release releases the reads the build did not take.
func (c coldReads) release() {
	for _, r := range c {
		if r.s.Len > 0 {
			r.s.Release()
			r.s = remote.Slice{}
		}
	}
}

// locateCold locates every partition of a fetch once (partition.Locate:
// no I/O for hot offsets) and keeps those that are cold or could not be
// located, for the build to use. With two or more cold partitions it also
// reads them all at once, so the sequential build after it does not wait
// on the bucket one partition at a time (Kafka serves one remote partition
// per fetch, KAFKA-14915).
func locateCold(ctx context.Context, env *Env, r *kmsg.FetchRequest, byID bool) coldReads {
	var cold coldReads
	var reads []coldKey
	for _, rt := range r.Topics {
		t, tok := env.topicByNameOrID(rt.Topic, rt.TopicID, byID)
		for _, rp := range rt.Partitions {
			p, code := env.fetchPartition(r, t, tok, rp.Partition, byID)
			if code != 0 {
				continue
			}
			loc, err := p.Locate(ctx, rp.FetchOffset)
			if err == nil && !loc.Cold() {
				continue
			}
			if cold == nil {
				cold = coldReads{}
			}
			k := coldKey{p, rp.FetchOffset}
			cold[k] = &coldRead{loc: loc, err: err, limit: int(max(rp.PartitionMaxBytes, 1))}
			if err == nil && fetchReplicaID(r) < 0 {
				reads = append(reads, k) // a follower's fetch reads nothing cold
			}
		}
	}
	if len(reads) < 2 {
		return cold
	}
	var wg sync.WaitGroup
	for _, k := range reads {
		c := cold[k]
		wg.Go(func() {
			s, err := k.p.ReadCold(ctx, c.loc, k.offset, c.limit)
			if err == nil && s.Len > 0 {
				c.s = s
			} else {
				s.Release()
			}
		})
	}
	wg.Wait()
	return cold
}
