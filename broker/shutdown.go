package broker

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/etcdstore"
)

// controlledShutdownTimeout bounds how long a stopping broker waits for its
// leaderships to move away before it closes anyway.
const controlledShutdownTimeout = 5 * time.Second

// controlledShutdownRetry is the pause between passes when a pass could
// not move everything (a lost compare-and-set, an etcd error).
const controlledShutdownRetry = 100 * time.Millisecond

// controlledShutdown moves leadership of every partition this broker leads
// to another live ISR member before the broker closes, as Kafka's
// controlled shutdown does, so clients re-route at once instead of waiting
// for the lease to expire.
//
// The broker writes the hand-over itself, by compare-and-set on the
// partition epoch, the same guard its ISR changes as leader go through (a
// leader may change its own partition's state; the controller's fenced
// writes and other leaders' writes lose or win cleanly against it). The
// new leader is the first live ISR member in replica order; this broker
// leaves the ISR, and both epochs are bumped. Partitions with no other
// live ISR member keep their leader. It returns once no partition with
// another live ISR member is led here, or after controlledShutdownTimeout,
// while the broker still serves requests (so in-flight produces get
// NOT_LEADER_OR_FOLLOWER and retry on the new leader).
func controlledShutdown(store *etcdstore.Store, self int32, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), controlledShutdownTimeout)
	defer cancel()
	cache := store.Cache()
	start := time.Now()
	for pass := 0; ; pass++ {
		changed := cache.Changed()
		moves := handOvers(cache, self)
		if len(moves) == 0 {
			log.Info("controlled shutdown: no leadership left to move", "passes", pass, "took", time.Since(start))
			return
		}
		for _, m := range moves {
			_, err := store.CompareAndSetPartition(ctx, m.topic, m.partition, m.prev.PartitionEpoch, m.next)
			switch {
			case err == nil:
				log.Info("controlled shutdown: leadership moved", "topic", m.topic, "partition", m.partition,
					"leader", m.next.Leader, "leader_epoch", m.next.LeaderEpoch)
			case errors.Is(err, metadata.ErrStaleEpoch), errors.Is(err, metadata.ErrUnknownTopic):
				// The partition changed meanwhile: the next pass re-decides.
			case errors.Is(err, metadata.ErrClosed):
				return
			default:
				log.Warn("controlled shutdown: move leadership", "topic", m.topic, "partition", m.partition, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			log.Warn("controlled shutdown: timed out; closing with leaderships left", "partitions", len(handOvers(cache, self)))
			return
		case <-cache.Done():
			return
		case <-changed:
		case <-time.After(controlledShutdownRetry):
		}
	}
}

// handOver is one leadership move controlledShutdown writes.
type handOver struct {
	topic      string
	partition  int32
	prev, next metadata.PartitionState
}

// handOvers lists the partitions led by self that another live ISR member
// can take over, with their next state.
func handOvers(cache *metadata.Cache, self int32) []handOver {
	live := map[int32]bool{}
	for _, b := range cache.Brokers() {
		live[b.ID] = b.ID != self
	}
	var out []handOver
	for _, t := range cache.Topics() {
		for _, p := range slices.Sorted(maps.Keys(t.Partitions)) {
			s := t.Partitions[p]
			if s.Leader != self {
				continue
			}
			if next, ok := handOverState(s, self, func(id int32) bool { return live[id] }); ok {
				out = append(out, handOver{topic: t.Name, partition: p, prev: s, next: next})
			}
		}
	}
	return out
}

// handOverState is s led by the first replica other than self that is
// alive and in the ISR, with self out of the ISR and both epochs bumped;
// ok is false when there is no such replica.
func handOverState(s metadata.PartitionState, self int32, alive func(int32) bool) (metadata.PartitionState, bool) {
	for _, r := range s.Replicas {
		if r != self && alive(r) && slices.Contains(s.ISR, r) {
			next := s.Clone()
			next.Leader = r
			next.ISR = slices.DeleteFunc(next.ISR, func(id int32) bool { return id == self })
			next.LeaderEpoch++
			next.PartitionEpoch++
			return next, true
		}
	}
	return s, false
}
