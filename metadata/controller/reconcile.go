package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
)

// maxParallelWrites bounds the partition writes one pass has in flight.
const maxParallelWrites = 16

// update is one partition state change the controller decided on.
type update struct {
	topic     string
	partition int32
	prev      metadata.PartitionState
	next      metadata.PartitionState
	why       string
}

// lead is the controller loop of one term: a reconcile pass now and at
// every cache change, retries with backoff after failed passes, and the
// periodic preferred-leader check. It returns when ctx ends, the cache
// closes, or a write finds the term fenced.
func (c *Controller) lead(ctx context.Context, term metadata.Term) error {
	var rebalance <-chan time.Time
	if c.opts.AutoLeaderRebalance {
		t := time.NewTicker(c.opts.RebalanceInterval)
		defer t.Stop()
		rebalance = t.C
	}
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	backoff := retryMin
	for {
		changed := c.cache.Changed()
		err := c.reconcile(ctx, term)
		switch {
		case errors.Is(err, metadata.ErrFenced):
			return err
		case err != nil && ctx.Err() == nil:
			c.retryFailed("controller pass failed; retrying", err, "retry_in", backoff)
			retry.Reset(backoff)
			backoff = min(2*backoff, retryMax)
		case err == nil:
			backoff = retryMin
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.cache.Done():
			return fmt.Errorf("controller: cache: %w", metadata.ErrClosed)
		case <-changed:
		case <-retry.C:
		case <-rebalance:
			if err := c.rebalance(ctx, term); errors.Is(err, metadata.ErrFenced) {
				return err
			} else if err != nil && ctx.Err() == nil {
				c.retryFailed("preferred leader rebalance failed", err)
			}
		}
	}
}

// liveness snapshots the live brokers and their controlled shutdowns.
func (c *Controller) liveness() Liveness { return LivenessOf(c.cache.Brokers()) }

// brokerConfig is the configuration topics' settings resolve against:
// the static one under the dynamic broker configs in the cache (this
// broker's own, then the cluster default), as Kafka's controller resolves
// a topic config from the config records it holds. It is read from the
// cache the controller decides from, so a change of the dynamic configs
// reaches the decision it wakes.
func (c *Controller) brokerConfig() *config.Broker {
	def, own := c.cache.BrokerConfigs(metadata.ClusterDefault), c.cache.BrokerConfigs(c.id)
	if def == nil && own == nil {
		return c.opts.Config
	}
	b, _ := c.opts.Config.Effective(def, own) // what it leaves out, the broker's own follower logs
	return b
}

// unclean reports whether t may elect a leader outside its ISR: its
// unclean.leader.election.enable, resolved as every topic setting is (the
// topic override, else the broker default of cfg). Configs that do not
// resolve (never stored: topic configs are validated when written) leave
// the broker default.
func unclean(cfg *config.Broker, t metadata.Topic) bool {
	tc, err := cfg.ResolveTopic(t.Configs)
	if err != nil {
		return cfg.UncleanLeaderElectionEnable
	}
	return tc.UncleanLeaderElection
}

// reconcile runs Reelect over every partition in the cache and writes the
// changes: leaders for partitions whose leader died, hand-overs from
// brokers in controlled shutdown, and ISRs without dead or shutting-down
// members.
func (c *Controller) reconcile(ctx context.Context, term metadata.Term) error {
	l := c.liveness()
	cfg := c.brokerConfig()
	var ups []update
	for _, t := range c.cache.Topics() {
		unclean := unclean(cfg, t)
		for _, p := range slices.Sorted(maps.Keys(t.Partitions)) {
			s := t.Partitions[p]
			if next, ok := Reelect(s, l, unclean); ok {
				ups = append(ups, update{topic: t.Name, partition: p, prev: s, next: next, why: reelectReason(s, next, l)})
			}
		}
	}
	return c.apply(ctx, term, ups)
}

// rebalance moves leadership back to preferred replicas for every broker
// whose share of preferred partitions led elsewhere exceeds
// ImbalancePercent (Kafka's checkAndTriggerAutoLeaderRebalance).
func (c *Controller) rebalance(ctx context.Context, term metadata.Term) error {
	l := c.liveness()
	total := make(map[int32]int)      // partitions preferring the broker
	misled := make(map[int32]int)     // of those, led by another broker
	moves := make(map[int32][]update) // of those, movable now
	for _, t := range c.cache.Topics() {
		for _, p := range slices.Sorted(maps.Keys(t.Partitions)) {
			s := t.Partitions[p]
			if len(s.Replicas) == 0 {
				continue
			}
			pref := s.Replicas[0]
			total[pref]++
			if s.Leader == pref {
				continue
			}
			misled[pref]++
			if next, err := PreferredLeader(s, l); err == nil && s.Leader != metadata.NoLeader {
				moves[pref] = append(moves[pref], update{topic: t.Name, partition: p, prev: s, next: next, why: "preferred leader rebalance"})
			}
		}
	}
	var ups []update
	for _, b := range slices.Sorted(maps.Keys(moves)) {
		if misled[b]*100 > total[b]*c.opts.ImbalancePercent {
			ups = append(ups, moves[b]...)
		}
	}
	return c.apply(ctx, term, ups)
}

// apply writes ups with at most maxParallelWrites in flight. A lost
// compare-and-set or a vanished topic is skipped (the cache will show the
// newer state); ErrFenced stops the remaining writes.
func (c *Controller) apply(ctx context.Context, term metadata.Term, ups []update) error {
	if len(ups) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, maxParallelWrites)
	)
	for _, u := range ups {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := c.write(ctx, term, u); err != nil {
				if errors.Is(err, metadata.ErrFenced) {
					cancel()
				}
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// reelectReason says why Reelect changed prev into next, for the log.
func reelectReason(prev, next metadata.PartitionState, l Liveness) string {
	switch {
	case prev.Leader != metadata.NoLeader && l.Alive(prev.Leader) && !l.Eligible(prev.Leader):
		return "controlled shutdown"
	case next.Leader != prev.Leader:
		return "leader lost"
	default:
		return "isr member lost or shutting down"
	}
}

// write stores one decided change, fenced by the term.
func (c *Controller) write(ctx context.Context, term metadata.Term, u update) error {
	_, err := term.CompareAndSetPartition(ctx, u.topic, u.partition, u.prev.PartitionEpoch, u.next)
	switch {
	case err == nil:
		c.log.Info("partition state changed", "topic", u.topic, "partition", u.partition, "why", u.why,
			"leader", u.next.Leader, "leader_epoch", u.next.LeaderEpoch, "isr", u.next.ISR,
			"prev_leader", u.prev.Leader, "prev_isr", u.prev.ISR)
		return nil
	case errors.Is(err, metadata.ErrStaleEpoch), errors.Is(err, metadata.ErrUnknownTopic):
		c.log.Debug("partition moved on before the controller's write", "topic", u.topic, "partition", u.partition, "err", err)
		return nil
	default:
		return fmt.Errorf("controller: %s-%d (%s): %w", u.topic, u.partition, u.why, err)
	}
}
