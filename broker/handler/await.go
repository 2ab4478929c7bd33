package handler

import (
	"context"
	"time"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata"
)

// awaitPartitions is the wait of Kafka's delayed operations (an acks=all
// produce, a DeleteRecords): it returns once pending(i) is false for every
// i (ps[i] needs no more waiting), or at deadline, when the broker drains
// (draining closed) or when ctx ends. Any change to a partition it waits
// on wakes it to check again (Partition.Wait): an append, the high
// watermark or a follower's log start moving, a change of role.
func awaitPartitions(ctx context.Context, ps []*partition.Partition, pending func(i int) bool, deadline time.Time, draining <-chan struct{}) {
	wake := make(chan struct{}, 1)
	defer func() {
		for _, p := range ps {
			p.Unwait(wake)
		}
	}()
	for {
		waiting := false
		for i, p := range ps {
			if pending(i) {
				p.Wait(wake)
				// Checked again once registered: a change in between
				// would not wake us.
				waiting = waiting || pending(i)
			}
		}
		if !waiting || !time.Now().Before(deadline) || ctx.Err() != nil || metadata.IsClosed(draining) {
			return
		}
		if !sleepUntilWoken(ctx, wake, deadline, draining) {
			return
		}
	}
}
