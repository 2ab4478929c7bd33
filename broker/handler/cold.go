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

// readRegion reads a partition for Fetch: from the tier when the offset
// is cold (partition.IsCold), else from the local log with read. The
// region is nil when there is nothing to send.
func readRegion(ctx context.Context, p *partition.Partition, read func(int64, int) (segment.Slice, error), offset int64, limit int, pre coldReads) (wire.Region, int64, error) {
	if s, ok := pre.take(p, offset, limit); ok {
		return s, s.Len, nil
	}
	if p.IsCold(offset) {
		s, err := p.ReadCold(ctx, offset, limit)
		if err != nil || s.Len == 0 {
			s.Release()
			return nil, 0, err
		}
		return s, s.Len, nil
	}
	s, err := read(offset, limit)
	if err != nil || s.Len == 0 {
		return nil, 0, err
	}
	return sliceRegion{s}, s.Len, nil
}

// coldKey names one partition's cold read in a fetch.
type coldKey struct {
	p      *partition.Partition
	offset int64
}

// coldReads are the reads prefetchCold made, for the build to use; the
// build owns them and releases what it did not take.
type coldReads map[coldKey]remote.Slice

// take hands over the prefetched read of p at offset if it fits in limit
// (the build's limit may be below the partition's when the response is
// nearly full); a read that does not fit is released.
func (c coldReads) take(p *partition.Partition, offset int64, limit int) (remote.Slice, bool) {
	k := coldKey{p, offset}
	s, ok := c[k]
	if !ok {
		return remote.Slice{}, false
	}
	delete(c, k)
	if s.Len > int64(limit) {
		s.Release()
		return remote.Slice{}, false
	}
	return s, true
}

// release releases the reads the build did not take.
func (c coldReads) release() {
	for k, s := range c {
		s.Release()
		delete(c, k)
	}
}

// prefetchCold reads every cold partition of a fetch at once, so the
// sequential build after it does not wait on the bucket one partition at a
// time (Kafka serves one remote partition per fetch, KAFKA-14915), and
// returns the reads for the build to use. With fewer than two cold
// partitions it does nothing.
func prefetchCold(ctx context.Context, env *Env, r *kmsg.FetchRequest, byID bool) coldReads {
	type cold struct {
		p      *partition.Partition
		offset int64
		limit  int
	}
	var colds []cold
	for _, rt := range r.Topics {
		t, tok := env.topicByNameOrID(rt.Topic, rt.TopicID, byID)
		for _, rp := range rt.Partitions {
			p, code := env.fetchPartition(r, t, tok, rp.Partition, byID)
			if code == 0 && p.IsCold(rp.FetchOffset) {
				colds = append(colds, cold{p, rp.FetchOffset, int(max(rp.PartitionMaxBytes, 1))})
			}
		}
	}
	if len(colds) < 2 {
		return nil
	}
	reads := make([]remote.Slice, len(colds))
	var wg sync.WaitGroup
	for i, c := range colds {
		wg.Go(func() {
			if s, err := c.p.ReadCold(ctx, c.offset, c.limit); err == nil {
				reads[i] = s
			}
		})
	}
	wg.Wait()
	pre := coldReads{}
	for i, c := range colds {
		if reads[i].Len > 0 {
			pre[coldKey{c.p, c.offset}] = reads[i]
		} else {
			reads[i].Release()
		}
	}
	return pre
}
