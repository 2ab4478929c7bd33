package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/producerid"
	"github.com/strata-broker/strata/broker/txn"
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
// * A transactional id goes to the transaction coordinator
//   (txn.Coordinator.InitProducerID): NOT_COORDINATOR when this broker does
//   not coordinate it, INVALID_TRANSACTION_TIMEOUT beyond
//   transaction.max.timeout.ms, CONCURRENT_TRANSACTIONS while its open
//   transaction is aborted to fence the previous producer (the client
//   retries), PRODUCER_FENCED for a v3+ request naming an older producer
//   than the id's (KIP-360). The epoch is bumped at each call, as in
//   Kafka. Without a coordinator (tests) it is
//   TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which clients surface at once.
// * A transactional id needs WRITE on it
//   (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer
//   IDEMPOTENT_WRITE on the cluster or WRITE on any topic
//   (CLUSTER_AUTHORIZATION_FAILED), as in Kafka (see ResourceTypeAuthorizer).

func handleInitProducerID(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil && !env.allowedTxnID(req, aclWrite, *r.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return Result{Resp: resp}, nil
	}
	if r.TransactionalID == nil && !env.allowedCluster(req, aclIdempotentWrite) && !env.allowedAnyOfType(req, aclWrite, resTopic) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return Result{Resp: resp}, nil
	}
	if r.TransactionalID != nil {
		if env.Txn == nil {
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			return Result{Resp: resp}, nil
		}
		expectedID, expectedEpoch := txn.NoProducerID, txn.NoProducerEpoch
		if r.Version >= 3 {
			expectedID, expectedEpoch = r.ProducerID, r.ProducerEpoch
		}
		p, err := env.Txn.InitProducerID(ctx, *r.TransactionalID, r.TransactionTimeoutMillis, expectedID, expectedEpoch)
		if resp.ErrorCode = txn.ErrorCode(err); err == nil {
			resp.ProducerID, resp.ProducerEpoch = p.ProducerID, p.ProducerEpoch
		}
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
	if e.ProducerIDs != nil {
		return e.ProducerIDs
	}
	e.pidOnce.Do(func() { e.pids = producerid.New(e.Store) })
	return e.pids
}
