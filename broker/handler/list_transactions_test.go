package handler

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestListTransactions(t *testing.T) {
	codes := func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.ListTransactionsResponse).ErrorCode} }
	ids := func(t *testing.T, s *scene) {
		withTxnCoordinator(t, s)
		initTxn(t, s, "tx-a")
		initTxn(t, s, "tx-b")
	}
	list := func(states []string, pattern *string) func(*testing.T, *scene) kmsg.Request {
		return func(*testing.T, *scene) kmsg.Request {
			req := kmsg.NewPtrListTransactionsRequest()
			req.StateFilters, req.TransactionalIDPattern = states, pattern
			return req
		}
	}
	wantIDs := func(unknown []string, want ...string) check[*kmsg.ListTransactionsResponse] {
		return func(t *testing.T, _ *scene, r *kmsg.ListTransactionsResponse) {
			var got []string
			for _, st := range r.TransactionStates {
				got = append(got, st.TransactionalID)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) || !slices.Equal(r.UnknownStateFilters, unknown) {
				t.Fatalf("listed %v, unknown filters %v; want %v, %v", got, r.UnknownStateFilters, want, unknown)
			}
		}
	}
	runRows(t, tableOpts{codes: codes}, []apiRow[*kmsg.ListTransactionsResponse]{
		{name: "every id", scene: txnScene, setup: ids, req: list(nil, nil), want: wantIDs(nil, "tx-a", "tx-b")},
		{name: "by state", scene: txnScene, setup: ids, req: list([]string{"Ongoing"}, nil), want: wantIDs(nil)},
		{name: "an unknown state", scene: txnScene, setup: ids, req: list([]string{"Bogus"}, nil), want: wantIDs([]string{"Bogus"})},
		{name: "by pattern", since: 2, scene: txnScene, setup: ids, req: list(nil, kmsg.StringPtr("tx-a|x")), want: wantIDs(nil, "tx-a")},
		{name: "a bad pattern", since: 2, scene: txnScene, setup: ids, req: list(nil, kmsg.StringPtr("(")), codes: []int16{kerr.InvalidRegularExpression.Code}},
	})
}
