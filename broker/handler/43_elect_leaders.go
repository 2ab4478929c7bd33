package handler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ElectLeaders: v0-2
//
// Behavior:
// * Whichever broker receives the request runs the elections itself:
//   controller.PreferredLeader (type 0, the only one before v1) or
//   controller.UncleanLeader (type 1) on the cached state, written by
//   compare-and-set on the partition epoch. That is the same guard the
//   leaders' ISR writes and the controller's own writes go through, so an
//   election racing any of them loses cleanly and is retried on the newer
//   state (a few times, then the partition's error is returned).
// * Null topics means every partition of every topic.
// * Codes per partition: ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
//   ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION; an unknown
//   election type is INVALID_REQUEST for the whole request (v1+).

// electAttempts bounds the compare-and-set retries of one election.
const electAttempts = 5

func handleElectLeaders(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.ElectLeadersRequest)
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	typ := controller.ElectionType(r.ElectionType)
	if r.Version == 0 {
		typ = controller.ElectPreferred
	}
	if typ != controller.ElectPreferred && typ != controller.ElectUnclean {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return Result{Resp: resp}, nil
	}
	if r.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(r.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}
	wanted := r.Topics
	if wanted == nil {
		for _, t := range env.Cache.Topics() {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = t.Name
			rt.Partitions = slices.Sorted(maps.Keys(t.Partitions))
			wanted = append(wanted, rt)
		}
	}
	for _, rt := range wanted {
		st := kmsg.NewElectLeadersResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewElectLeadersResponseTopicPartition()
			sp.Partition = p
			if err := env.electLeader(ctx, typ, rt.Topic, p); err != nil {
				sp.ErrorCode, sp.ErrorMessage = electionCode(err), errorMessage(err)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return Result{Resp: resp}, nil
}

// electLeader runs one election, retrying on a lost compare-and-set once
// the cache shows the newer state.
func (e *Env) electLeader(ctx context.Context, typ controller.ElectionType, topic string, p int32) error {
	var err error
	for range electAttempts {
		changed := e.Cache.Changed()
		s, ok := e.Cache.Partition(topic, p)
		if !ok {
			return fmt.Errorf("elect %s-%d: %w", topic, p, metadata.ErrUnknownTopic)
		}
		alive := liveBrokers(e.Cache)
		var next metadata.PartitionState
		if typ == controller.ElectUnclean {
			next, err = controller.UncleanLeader(s, alive)
		} else {
			next, err = controller.PreferredLeader(s, alive)
		}
		if err != nil {
			return err
		}
		if _, err = e.Store.CompareAndSetPartition(ctx, topic, p, s.PartitionEpoch, next); !errors.Is(err, metadata.ErrStaleEpoch) {
			if err == nil {
				e.Log.Info("leader elected on request", "topic", topic, "partition", p, "type", typ, "leader", next.Leader, "leader_epoch", next.LeaderEpoch)
			}
			return err
		}
		select { // the cache lags the store: wait for the newer state
		case <-changed:
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
	return err
}

// liveBrokers snapshots the registered brokers as a membership test.
func liveBrokers(c *metadata.Cache) func(int32) bool {
	live := map[int32]bool{}
	for _, b := range c.Brokers() {
		live[b.ID] = true
	}
	return func(id int32) bool { return live[id] }
}

// electionCode maps an election outcome to its Kafka code.
func electionCode(err error) int16 {
	switch {
	case errors.Is(err, controller.ErrElectionNotNeeded):
		return kerr.ElectionNotNeeded.Code
	case errors.Is(err, controller.ErrPreferredLeaderNotAvailable):
		return kerr.PreferredLeaderNotAvailable.Code
	case errors.Is(err, controller.ErrEligibleLeadersNotAvailable):
		return kerr.EligibleLeadersNotAvailable.Code
	case errors.Is(err, metadata.ErrStaleEpoch):
		return kerr.RequestTimedOut.Code
	default:
		return errorCode(err)
	}
}
