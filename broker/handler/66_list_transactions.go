package handler

import (
	"context"
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/txn"
)

// ListTransactions: v0-2
//
// Behavior:
// * Lists the transactional ids this broker coordinates (clients ask
//   every broker), filtered by state, producer id, how long the
//   transaction has been open (v1, KIP-994) and a pattern the whole id
//   must match (v2): txn.Coordinator.List. While a led
//   __transaction_state partition loads it is
//   COORDINATOR_LOAD_IN_PROGRESS, as in Kafka.
// * State filters Kafka does not know are returned in
//   UnknownStateFilters; with none known, nothing matches.
// * The pattern is a Go (RE2) regular expression, Kafka's a Java one: the
//   common subset behaves alike. One that does not compile is
//   INVALID_REGULAR_EXPRESSION.
// * Without a transaction coordinator (tests) the list is empty.
// * Only the ids the principal may DESCRIBE are listed, as in Kafka.

func handleListTransactions(_ context.Context, env *Env, req *Request) (Result, error) {
	r := req.Body.(*kmsg.ListTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
	if env.Txn == nil {
		return Result{Resp: resp}, nil
	}
	f := txn.ListFilter{ProducerIDs: r.ProducerIDFilters}
	if r.Version >= 1 && r.DurationFilterMillis > 0 {
		f.MinDuration = time.Duration(r.DurationFilterMillis) * time.Millisecond
	}
	for _, name := range r.StateFilters {
		if s, err := kmsg.ParseTransactionState(name); err == nil {
			f.States = append(f.States, s)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	var pattern *regexp.Regexp
	if r.Version >= 2 && r.TransactionalIDPattern != nil && *r.TransactionalIDPattern != "" {
		p, err := regexp.Compile("^(?:" + *r.TransactionalIDPattern + ")$")
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return Result{Resp: resp}, nil
		}
		pattern = p
	}
	if len(r.StateFilters) > 0 && len(f.States) == 0 {
		return Result{Resp: resp}, nil
	}
	list, loading := env.Txn.List(f)
	if loading {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return Result{Resp: resp}, nil
	}
	for _, d := range list {
		if pattern != nil && !pattern.MatchString(d.TransactionalID) || !env.allowedTxnID(req, aclDescribe, d.TransactionalID) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = d.TransactionalID, d.ProducerID, d.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return Result{Resp: resp}, nil
}
