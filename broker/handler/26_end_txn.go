package handler

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/txn"
)

// EndTxn: v0-5
//
// Behavior:
// * Commits or aborts the producer's transaction (txn.Coordinator.EndTxn):
//   PrepareCommit or PrepareAbort is logged to __transaction_state and
//   answered; the markers are then written to the transaction's
//   partitions in the background, after which the transaction completes.
//   Until it does, the id's next request is CONCURRENT_TRANSACTIONS
//   (retriable), as in Kafka.
// * Before v5 (transaction version 0-1) the epoch stays: a repeated end
//   of the transaction just completed succeeds; an end
//   with nothing open, or the other end of one ending, is
//   INVALID_TXN_STATE; an older epoch PRODUCER_FENCED; another producer
//   id INVALID_PRODUCER_ID_MAPPING; NOT_COORDINATOR and
//   COORDINATOR_LOAD_IN_PROGRESS as for the other transaction APIs.
// * Without a transaction coordinator (tests) it is
//   TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as without WRITE on the
//   transactional id.
//
// Version notes:
// * v3: flexible; v4: no change here (TRANSACTION_ABORTABLE is never
//   answered)
// * v5 (KIP-890 part 2, transaction version 2): every end, commit or
//   abort, bumps the producer epoch (or moves to a new producer id once
//   it is exhausted) and answers the producer to go on with; a retried
//   end is recognised by the epoch it bumped and answers that producer
//   again. An abort with nothing open succeeds (and bumps), a commit
//   with nothing open is INVALID_TXN_STATE. On an error the producer is
//   -1/-1.

func handleEndTxn(ctx context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.EndTxnRequest)
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = txn.NoProducerID, txn.NoProducerEpoch
	if env.Txn == nil || !env.allowedTxnID(req, aclWrite, r.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return Result{Resp: resp}, nil
	}
	v := txn.TV0
	if r.Version >= 5 {
		v = txn.TV2
	}
	out, err := env.Txn.EndTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit, v)
	if resp.ErrorCode = txn.ErrorCode(err); err == nil && v == txn.TV2 {
		resp.ProducerID, resp.ProducerEpoch = out.ProducerID, out.ProducerEpoch
	}
	return Result{Resp: resp}, nil
}
