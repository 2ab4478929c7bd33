package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/controller"
)

// ControlledShutdownTimeout bounds how long a stopping broker waits for its
// leaderships to move away before it closes anyway; a supervisor's stop
// timeout (systemd's TimeoutStopSec, Kubernetes'
// terminationGracePeriodSeconds) must exceed it.
const ControlledShutdownTimeout = 5 * time.Second

// controlledShutdown announces this broker's controlled shutdown and waits
// until the controller moved its leaderships away, as Kafka's controlled
// shutdown does, so clients re-route at once instead of waiting for the
// lease to expire.
//
// The broker writes no partition state itself (the controller is the one
// writer of leadership): RequestShutdown flags its registration, and the
// controller, wherever it runs, moves the leadership of every partition
// led here to the first live ISR member not shutting down, in replica
// order, and takes this broker out of the ISRs it follows, by its fenced
// writes (metadata/controller). Partitions with no other such member keep
// their leader. This returns once the cache shows no partition led here
// that the controller would move (controller.Reelect), or after
// ControlledShutdownTimeout (e.g. no controller is elected), while the
// broker still serves requests, so in-flight produces get
// NOT_LEADER_OR_FOLLOWER and retry on the new leader.
func controlledShutdown(reg metadata.Registration, cache *metadata.Cache, self int32, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), ControlledShutdownTimeout)
	defer cancel()
	start := time.Now()
	if _, err := reg.RequestShutdown(ctx); err != nil {
		log.Warn("controlled shutdown: cannot announce it; closing with leaderships left", "err", err)
		return
	}
	led := ledBy(cache, self)
	for {
		changed := cache.Changed()
		for tp := range led {
			if s, ok := cache.Partition(tp.Topic, tp.Partition); !ok || s.Leader != self {
				log.Info("controlled shutdown: leadership moved", "topic", tp.Topic, "partition", tp.Partition,
					"leader", s.Leader, "leader_epoch", s.LeaderEpoch)
				delete(led, tp)
			}
		}
		left := toMove(cache, self)
		if left == 0 {
			log.Info("controlled shutdown: no leadership left to move", "took", time.Since(start))
			return
		}
		select {
		case <-ctx.Done():
			log.Warn("controlled shutdown: timed out; closing with leaderships left", "partitions", left)
			return
		case <-cache.Done():
			return
		case <-changed:
		}
	}
}

// ledBy lists the partitions led by self.
func ledBy(cache *metadata.Cache, self int32) map[controller.TopicPartition]bool {
	out := map[controller.TopicPartition]bool{}
	for _, t := range cache.Topics() {
		for p, s := range t.Partitions {
			if s.Leader == self {
				out[controller.TopicPartition{Topic: t.Name, Partition: p}] = true
			}
		}
	}
	return out
}

// toMove counts the partitions led by self that the controller would
// hand to another broker now.
func toMove(cache *metadata.Cache, self int32) int {
	l := controller.LivenessOf(cache.Brokers())
	n := 0
	for _, t := range cache.Topics() {
		for _, s := range t.Partitions {
			if s.Leader != self {
				continue
			}
			if next, ok := controller.Reelect(s, l, false); ok && next.Leader != self {
				n++
			}
		}
	}
	return n
}
