package controller

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/strata-broker/strata/metadata"
)

// reassignPoll is how often the controller re-reads pending reassignment
// requests (they live outside the metadata cache) besides cache changes.
const reassignPoll = 250 * time.Millisecond

// ReassignStep returns the next state on the way from s to the replica
// set target, Kafka's reassignment sequence:
//
//  1. the replicas become target followed by the old replicas not in it
//     (the new ones start fetching; the leader adds them to the ISR once
//     caught up);
//  2. once every target replica is in the ISR, a leader outside target
//     hands over to the first eligible target replica (both epochs
//     bumped; see Liveness);
//  3. the replicas become exactly target and the ISR loses the removed
//     ones (their brokers delete their logs).
//
// changed is false while waiting for step 2's condition; done is true
// when s already has exactly the target replicas.
func ReassignStep(s metadata.PartitionState, target []int32, l Liveness) (next metadata.PartitionState, changed, done bool) {
	if slices.Equal(s.Replicas, target) {
		return s, false, true
	}
	var extra []int32
	for _, r := range s.Replicas {
		if !slices.Contains(target, r) {
			extra = append(extra, r)
		}
	}
	for _, r := range target {
		if !slices.Contains(s.Replicas, r) {
			next = s.Clone()
			next.Replicas = append(slices.Clone(target), extra...)
			next.PartitionEpoch++
			return next, true, false
		}
	}
	for _, r := range target {
		if !slices.Contains(s.ISR, r) {
			return s, false, false // step 2 waits for the new replicas to catch up
		}
	}
	if !slices.Contains(target, s.Leader) {
		for _, r := range target {
			if l.Eligible(r) {
				return withLeader(s, r, slices.Clone(s.ISR)), true, false
			}
		}
		return s, false, false
	}
	next = s.Clone()
	next.Replicas = slices.Clone(target)
	next.ISR = slices.DeleteFunc(next.ISR, func(r int32) bool { return !slices.Contains(target, r) })
	next.PartitionEpoch++
	return next, true, false
}

// RunReassignments drives pending reassignment requests
// (metadata.Reassignments) while this broker is the controller, one ReassignStep per
// partition and pass, with fenced compare-and-set writes; a finished
// request is deleted. Passes run at cache changes and every reassignPoll.
// It returns when ctx ends.
func (c *Controller) RunReassignments(ctx context.Context) {
	tick := time.NewTicker(reassignPoll)
	defer tick.Stop()
	for {
		changed := c.cache.Changed()
		if term, err := c.currentTerm(); err == nil {
			if err := c.reassignPass(ctx, term); err != nil && ctx.Err() == nil {
				c.retryFailed("reassignment pass failed", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-c.cache.Done():
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

// reassignPass advances every pending reassignment by one step.
func (c *Controller) reassignPass(ctx context.Context, term metadata.Term) error {
	rs, err := c.store.Reassignments(ctx)
	if err != nil {
		return err
	}
	l := c.liveness()
	var errs []error
	for _, r := range rs {
		s, ok := c.cache.Partition(r.Topic, r.Partition)
		if !ok { // topic deleted: the request is moot
			errs = append(errs, c.store.DeleteReassignment(ctx, r))
			continue
		}
		next, changed, done := ReassignStep(s, r.Target, l)
		if done {
			c.log.Info("reassignment complete", "topic", r.Topic, "partition", r.Partition, "replicas", r.Target)
			errs = append(errs, c.store.DeleteReassignment(ctx, r))
			continue
		}
		if !changed {
			continue
		}
		err := c.write(ctx, term, update{topic: r.Topic, partition: r.Partition, prev: s, next: next, why: "reassignment"})
		if errors.Is(err, metadata.ErrFenced) {
			return err
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
