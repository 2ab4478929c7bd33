package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/strata-broker/strata/metadata"
)

// ElectionType is the kind of election ElectLeaders runs, numbered as in
// Kafka's ElectLeaders request.
type ElectionType int8

// The election types of ElectLeaders.
const (
	// ElectPreferred moves leadership to the first replica (PreferredLeader).
	ElectPreferred ElectionType = 0
	// ElectUnclean elects a leader for a partition without a live one,
	// outside the ISR if need be (UncleanLeader).
	ElectUnclean ElectionType = 1
)

// ErrUnknownElectionType: ElectLeaders got a type other than
// ElectPreferred and ElectUnclean.
var ErrUnknownElectionType = errors.New("controller: unknown election type")

// TopicPartition names one partition of an ElectLeaders call.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// electAttempts bounds the elections of one partition that lose their
// compare-and-set (a leader's ISR change or a reconcile pass came first).
const electAttempts = 5

// electRetryWait bounds the wait for the cache to show the state that
// won, before an election is decided again.
const electRetryWait = time.Second

// ElectLeaders runs the elections of an ElectLeaders request (the API,
// whichever broker received it, or an operator), each written through
// this controller's term like every other controller write, so an
// election can only land while this broker is the controller. It returns
// one outcome per partition of parts, in order: nil when elected, else
// an error wrapping ErrElectionNotNeeded, ErrPreferredLeaderNotAvailable,
// ErrEligibleLeadersNotAvailable, metadata.ErrUnknownTopic,
// ErrNotController (the term ended before the write landed; wrapping
// metadata.ErrFenced too when the write was refused), metadata.ErrStaleEpoch
// (lost the compare-and-set electAttempts times) or ctx's error. It fails
// as a whole with ErrNotController unless this broker is the active
// controller, and with ErrUnknownElectionType.
func (c *Controller) ElectLeaders(ctx context.Context, typ ElectionType, parts []TopicPartition) ([]error, error) {
	if typ != ElectPreferred && typ != ElectUnclean {
		return nil, fmt.Errorf("%w %d", ErrUnknownElectionType, typ)
	}
	term, err := c.currentTerm()
	if err != nil {
		return nil, err
	}
	out := make([]error, len(parts))
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallelWrites)
	for i, tp := range parts {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			out[i] = ctx.Err()
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i] = c.elect(ctx, term, typ, tp)
		})
	}
	wg.Wait()
	return out, nil
}

// elect runs one election, deciding again on the newer state after a
// lost compare-and-set.
func (c *Controller) elect(ctx context.Context, term metadata.Term, typ ElectionType, tp TopicPartition) error {
	var err error
	for range electAttempts {
		changed := c.cache.Changed()
		s, ok := c.cache.Partition(tp.Topic, tp.Partition)
		if !ok {
			return fmt.Errorf("controller: elect %s-%d: %w", tp.Topic, tp.Partition, metadata.ErrUnknownTopic)
		}
		var next metadata.PartitionState
		if typ == ElectUnclean {
			next, err = UncleanLeader(s, c.liveness())
		} else {
			next, err = PreferredLeader(s, c.liveness())
		}
		if err != nil {
			return fmt.Errorf("controller: elect %s-%d: %w", tp.Topic, tp.Partition, err)
		}
		_, err = term.CompareAndSetPartition(ctx, tp.Topic, tp.Partition, s.PartitionEpoch, next)
		switch {
		case err == nil:
			c.log.Info("leader elected on request", "topic", tp.Topic, "partition", tp.Partition, "type", typ,
				"leader", next.Leader, "leader_epoch", next.LeaderEpoch, "prev_leader", s.Leader)
			return nil
		case errors.Is(err, metadata.ErrFenced):
			return fmt.Errorf("controller: elect %s-%d: %w: %w", tp.Topic, tp.Partition, ErrNotController, err)
		case !errors.Is(err, metadata.ErrStaleEpoch):
			return fmt.Errorf("controller: elect %s-%d: %w", tp.Topic, tp.Partition, err)
		}
		t := time.NewTimer(electRetryWait) // the cache lags the store: wait for the newer state
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("controller: elect %s-%d: %w", tp.Topic, tp.Partition, err)
}
