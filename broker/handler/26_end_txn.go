package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/txn"
)

// EndTxn: v0-4
//
// Behavior:
// * Commits or aborts the producer's transaction (txn.Coordinator.EndTxn):
//   PrepareCommit or PrepareAbort is logged to __transaction_state and
//   answered; the markers are then written to the transaction's
//   partitions in the background, after which the transaction completes.
//   Until it does, the id's next request is CONCURRENT_TRANSACTIONS
//   (retriable), as in Kafka.
// * A repeated end of the transaction just completed succeeds; an end
//   with nothing open, or the other end of one ending, is
//   INVALID_TXN_STATE; an older epoch PRODUCER_FENCED; another producer
//   id INVALID_PRODUCER_ID_MAPPING; NOT_COORDINATOR and
//   COORDINATOR_LOAD_IN_PROGRESS as for the other transaction APIs.
// * Without a transaction coordinator (tests) it is
//   TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
//
// Version notes:
// * v3: flexible; v4: no change here (TRANSACTION_ABORTABLE is never
//   answered)
// * v5 (KIP-890 part 2: every end bumps the epoch) is not advertised.

func handleEndTxn(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.EndTxnRequest)
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = txn.NoProducerID, txn.NoProducerEpoch
	if env.Txn == nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return Result{Resp: resp}, nil
	}
	_, err := env.Txn.EndTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit, txn.TV0)
	resp.ErrorCode = txn.ErrorCode(err)
	return Result{Resp: resp}, nil
}
