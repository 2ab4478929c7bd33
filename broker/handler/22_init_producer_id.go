package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/producerid"
)

// InitProducerId: v0-5
//
// Behavior:
// * Idempotent producers (no transactional id) get a fresh producer id with
//   epoch 0, from blocks reserved in etcd so ids stay unique across
//   restarts and brokers. The previous id/epoch of v3+ requests is not
//   needed for them: a new id is always safe.
// * While no block can be reserved it is COORDINATOR_LOAD_IN_PROGRESS, as
//   Kafka answers without an id block (retriable; a timeout is fatal to
//   older clients).
// * Transactional ids are not served (Strata has no transactions yet):
//   the answer is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which clients
//   surface at once instead of retrying forever.

func handleInitProducerID(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return Result{Resp: resp}, nil
	}
	id, err := env.nextProducerID(ctx)
	if err != nil {
		env.Log.Error("allocate producer id", "err", err)
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return Result{Resp: resp}, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return Result{Resp: resp}, nil
}

// nextProducerID hands out a producer id from the broker's allocator.
func (e *Env) nextProducerID(ctx context.Context) (int64, error) {
	return e.ProducerIDAllocator().Next(ctx)
}

// ProducerIDAllocator is the broker's one producer-id allocator, built
// over Store on first use; the transaction coordinator allocates from it
// too.
func (e *Env) ProducerIDAllocator() *producerid.Allocator {
	e.pidOnce.Do(func() { e.pids = producerid.New(e.Store) })
	return e.pids
}
