package handler

import (
	"context"
	"sync"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/broker/wire"
	"github.com/strata-broker/strata/tier/segment"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readRegion reads a partition for Fetch: from the tier when the offset
// is cold (partition.IsCold), else from the local log with read. The
// region is nil when there is nothing to send.
func readRegion(ctx context.Context, p *partition.Partition, read func(int64, int) (segment.Slice, error), offset int64, limit int) (wire.Region, int64, error) {
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

// prefetchCold warms the tier's chunk cache for every cold partition of a
// fetch at once, so the sequential build after it does not wait on the
// bucket one partition at a time (Kafka serves one remote partition per
// fetch, KAFKA-14915). With fewer than two cold partitions it does nothing.
func prefetchCold(ctx context.Context, env *Env, r *kmsg.FetchRequest, byID bool) {
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
		return
	}
	var wg sync.WaitGroup
	for _, c := range colds {
		wg.Go(func() {
			if s, err := c.p.ReadCold(ctx, c.offset, c.limit); err == nil {
				s.Release()
			}
		})
	}
	wg.Wait()
}
