package handler

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/strata-broker/strata/broker/peer"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/controller"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ElectLeaders: v0-2
//
// Behavior:
// * Only the active controller elects, through its term like all its
//   writes (controller.Controller.ElectLeaders: PreferredLeader for type 0,
//   the only one before v1, UncleanLeader for type 1), so a deposed
//   controller or any other broker can change nothing. A lost
//   compare-and-set (a leader's ISR change came first) is decided again on
//   the newer state a few times.
// * Any other broker forwards the request to the controller (as KRaft
//   brokers forward admin requests, KIP-590) over the Kafka protocol with
//   client id peer.ClientID, and relays the answer. Forwarding is one hop:
//   a forwarded request that reaches a broker which is not the controller
//   is answered NOT_CONTROLLER, and the forwarding broker tries again at
//   the controller its observer names next, until the request's timeout.
//   While no controller is elected the request waits for one (a single
//   broker elects itself), then answers NOT_CONTROLLER.
// * Null topics means every partition of every topic (listed by the
//   controller).
// * Codes per partition: ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
//   ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION; NOT_CONTROLLER
//   or REQUEST_TIMED_OUT for partitions no controller decided in time (then
//   also at the top level, v1+, when none was decided); an unknown election
//   type is INVALID_REQUEST for the whole request (v1+).
// * Needs ALTER on the cluster: CLUSTER_AUTHORIZATION_FAILED for every
//   partition asked for and at the top level (v1+), as in Kafka. A
//   forwarded request is checked again here for the forwarding broker's
//   principal.

// Timing of ElectLeaders.
const (
	// electTimeout bounds a request that sets no timeout.
	electTimeout = 30 * time.Second
	// electRetry is the longest pause before trying again to reach the
	// controller.
	electRetry = 100 * time.Millisecond
	// forwardVersion is the version of forwarded requests (both ends are
	// Strata): it has the election type and the top-level error code.
	forwardVersion = 2
)

func handleElectLeaders(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.ElectLeadersRequest)
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	if !env.allowedCluster(req, aclAlter) {
		el := newElections(r.Topics)
		el.all, el.refused, el.stuck = false, kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code
		return Result{Resp: el.response(resp, env.Cache)}, nil
	}
	typ := controller.ElectionType(r.ElectionType)
	if r.Version == 0 {
		typ = controller.ElectPreferred
	}
	if typ != controller.ElectPreferred && typ != controller.ElectUnclean {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return Result{Resp: resp}, nil
	}
	timeout := electTimeout
	if r.TimeoutMillis > 0 {
		timeout = time.Duration(r.TimeoutMillis) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	el := newElections(r.Topics)
	forwarded := req.Header.ClientID == peer.ClientID
	for !el.done() {
		observed, role := env.controllerChanges()
		ctl := env.knownController()
		switch {
		case env.Elector != nil && env.Elector.IsLeader():
			env.electHere(ctx, typ, el)
		case forwarded && ctl != env.cfg().NodeID:
			el.stuck = kerr.NotController.Code // one hop only
			return Result{Resp: el.response(resp, env.Cache)}, nil
		case !forwarded && ctl >= 0 && ctl != env.cfg().NodeID && env.Peers != nil:
			env.forwardElections(ctx, ctl, typ, el)
		default: // no controller yet, or this broker's term not yet begun
			el.stuck = kerr.NotController.Code
		}
		if el.done() {
			break
		}
		t := time.NewTimer(electRetry)
		select {
		case <-observed:
		case <-role:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		if ctx.Err() != nil {
			break
		}
	}
	return Result{Resp: el.response(resp, env.Cache)}, nil
}

// elections collects the outcome of each requested partition while the
// request looks for the controller to decide them.
type elections struct {
	req     []kmsg.ElectLeadersRequestTopic // nil: every partition
	all     bool                            // every partition, not yet listed by a controller
	pending []controller.TopicPartition     // not yet decided
	decided map[controller.TopicPartition]outcome
	// stuck is the code of partitions still pending when the request
	// ends: why no controller decided them.
	stuck int16
	// refused is the top-level code of a controller that refused the
	// whole request.
	refused int16
}

// outcome is one partition's answer.
type outcome struct {
	code int16
	msg  *string
}

func newElections(topics []kmsg.ElectLeadersRequestTopic) *elections {
	el := &elections{req: topics, all: topics == nil, decided: map[controller.TopicPartition]outcome{}, stuck: kerr.NotController.Code}
	for _, rt := range topics {
		for _, p := range rt.Partitions {
			tp := controller.TopicPartition{Topic: rt.Topic, Partition: p}
			if !slices.Contains(el.pending, tp) {
				el.pending = append(el.pending, tp)
			}
		}
	}
	return el
}

// done reports whether every partition has its outcome.
func (el *elections) done() bool { return !el.all && len(el.pending) == 0 }

// settle records the outcomes of the pending partitions and keeps pending
// those for which code is NOT_CONTROLLER (the controller's term ended).
func (el *elections) settle(parts []controller.TopicPartition, outcomes []outcome) {
	el.all = false
	el.pending = el.pending[:0]
	for i, tp := range parts {
		if outcomes[i].code == kerr.NotController.Code {
			el.pending = append(el.pending, tp)
			continue
		}
		el.decided[tp] = outcomes[i]
	}
}

// electHere runs the pending elections on this broker, the controller.
func (e *Env) electHere(ctx context.Context, typ controller.ElectionType, el *elections) {
	parts := el.pending
	if el.all {
		parts = allPartitions(e.Cache)
	}
	errs, err := e.Elector.ElectLeaders(ctx, typ, parts)
	if err != nil { // no longer the controller: nothing ran
		el.stuck = electionCode(err)
		return
	}
	outcomes := make([]outcome, len(errs))
	for i, err := range errs {
		if err != nil {
			outcomes[i] = outcome{electionCode(err), errorMessage(err)}
		}
	}
	el.settle(slices.Clone(parts), outcomes)
	el.stuck = kerr.NotController.Code
}

// forwardElections asks the controller, broker ctl, to run the pending
// elections.
func (e *Env) forwardElections(ctx context.Context, ctl int32, typ controller.ElectionType, el *elections) {
	fwd := kmsg.NewPtrElectLeadersRequest()
	fwd.SetVersion(forwardVersion)
	fwd.ElectionType = int8(typ)
	if d, ok := ctx.Deadline(); ok { // the controller answers a little before this broker gives up
		fwd.TimeoutMillis = int32(max(time.Until(d).Milliseconds()*9/10, 1))
	}
	if !el.all {
		fwd.Topics = requestTopics(el.pending)
	}
	kresp, err := e.Peers.Request(ctx, ctl, fwd)
	if err != nil {
		e.Log.Debug("forward ElectLeaders to the controller", "controller", ctl, "err", err)
		el.stuck = kerr.RequestTimedOut.Code
		return
	}
	resp := kresp.(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != 0 {
		el.stuck = resp.ErrorCode
		if resp.ErrorCode != kerr.NotController.Code { // the controller refused the request itself
			el.refused = resp.ErrorCode
			el.settle(nil, nil)
		}
		return
	}
	var parts []controller.TopicPartition
	var outcomes []outcome
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			parts = append(parts, controller.TopicPartition{Topic: rt.Topic, Partition: rp.Partition})
			outcomes = append(outcomes, outcome{rp.ErrorCode, rp.ErrorMessage})
		}
	}
	el.settle(parts, outcomes)
	el.stuck = kerr.NotController.Code
}

// response fills resp: the outcome of each requested partition (in
// request order; every partition, sorted, for null topics), and the code
// of partitions left undecided.
func (el *elections) response(resp *kmsg.ElectLeadersResponse, cache *metadata.Cache) *kmsg.ElectLeadersResponse {
	switch {
	case el.refused != 0:
		resp.ErrorCode = el.refused
	case len(el.decided) == 0 && (el.all || len(el.pending) > 0): // no controller reached
		resp.ErrorCode = el.stuck
	}
	topics := el.req
	if topics == nil {
		parts := slices.Collect(maps.Keys(el.decided))
		if el.all {
			parts = allPartitions(cache)
		}
		topics = requestTopics(append(parts, el.pending...))
	}
	for _, rt := range topics {
		st := kmsg.NewElectLeadersResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewElectLeadersResponseTopicPartition()
			sp.Partition = p
			o, ok := el.decided[controller.TopicPartition{Topic: rt.Topic, Partition: p}]
			if !ok {
				o = outcome{code: el.stuck}
			}
			sp.ErrorCode, sp.ErrorMessage = o.code, o.msg
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// allPartitions lists every partition in the cache.
func allPartitions(cache *metadata.Cache) []controller.TopicPartition {
	var out []controller.TopicPartition
	for _, t := range cache.Topics() {
		for _, p := range slices.Sorted(maps.Keys(t.Partitions)) {
			out = append(out, controller.TopicPartition{Topic: t.Name, Partition: p})
		}
	}
	return out
}

// requestTopics groups parts by topic, sorted, without duplicates.
func requestTopics(parts []controller.TopicPartition) []kmsg.ElectLeadersRequestTopic {
	parts = slices.Clone(parts)
	slices.SortFunc(parts, func(a, b controller.TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	parts = slices.Compact(parts)
	var out []kmsg.ElectLeadersRequestTopic
	for i, tp := range parts {
		if i == 0 || tp.Topic != parts[i-1].Topic {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic = tp.Topic
			out = append(out, rt)
		}
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, tp.Partition)
	}
	return out
}

// knownController is the controller the observer names, or
// metadata.NoController.
func (e *Env) knownController() int32 {
	if e.Controller == nil {
		return metadata.NoController
	}
	return e.Controller.ControllerID()
}

// controllerChanges returns channels closed at the next change of the
// controller record and of this broker's controller role (nil, never
// closed, for what is not followed).
func (e *Env) controllerChanges() (observed, role <-chan struct{}) {
	if e.Controller != nil {
		observed = e.Controller.Changed()
	}
	if e.Elector != nil {
		role = e.Elector.Changed()
	}
	return observed, role
}

// electionCode maps an election outcome to its Kafka code.
func electionCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, controller.ErrNotController):
		return kerr.NotController.Code
	case errors.Is(err, controller.ErrElectionNotNeeded):
		return kerr.ElectionNotNeeded.Code
	case errors.Is(err, controller.ErrPreferredLeaderNotAvailable):
		return kerr.PreferredLeaderNotAvailable.Code
	case errors.Is(err, controller.ErrEligibleLeadersNotAvailable):
		return kerr.EligibleLeadersNotAvailable.Code
	case errors.Is(err, controller.ErrUnknownElectionType):
		return kerr.InvalidRequest.Code
	case errors.Is(err, metadata.ErrStaleEpoch), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut.Code
	default:
		return errorCode(err)
	}
}
