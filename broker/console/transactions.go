package console

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnRow is one transactional id as its coordinator describes it.
type txnRow struct {
	ID          string
	State       string
	ProducerID  int64
	Epoch       int16
	Coordinator int32
	StartMs     int64 // -1: no transaction open
	AgeMs       int64 // -1: no transaction open
	TimeoutMs   int32
	Hanging     bool // open for longer than its timeout
	Partitions  []string
}

// txnsData is the transactions page's data.
type txnsData struct {
	pageInfo
	Rows   []txnRow
	Show   string // open, hanging or all
	Filter string // a substring of the transactional id
	Errs   []string
}

// txnShows are the transactions page's selections.
var txnShows = map[string]func(r txnRow) bool{
	"open":    func(r txnRow) bool { return r.StartMs >= 0 },
	"hanging": func(r txnRow) bool { return r.Hanging },
	"all":     func(txnRow) bool { return true },
}

// transactions lists the transactional ids of every coordinator
// (ListTransactions, then DescribeTransactions for their start, timeout
// and partitions), those the user may describe and whose ids hold the
// filter, oldest open first, a page at a time.
func (s *Server) transactions(q *req) {
	d := txnsData{Show: q.r.FormValue("show"), Filter: q.r.FormValue("filter")}
	if d.Show == "" {
		d.Show = "open"
	}
	keep, ok := txnShows[d.Show]
	if !ok {
		s.fail(q, http.StatusBadRequest, fmt.Errorf("show: want open, hanging or all, not %q", d.Show))
		return
	}
	pr, ok := s.pageOf(q)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(q.r.Context(), peerWait)
	defer cancel()
	now := time.Now().UnixMilli()
	var all []txnRow
	for _, b := range q.env.Cache.Brokers() {
		rows, err := brokerTxns(ctx, q.be, b.ID, d.Filter, now)
		if err != nil {
			d.Errs = append(d.Errs, err.Error())
		}
		for _, r := range rows {
			if keep(r) {
				all = append(all, r)
			}
		}
	}
	slices.SortFunc(all, func(a, b txnRow) int { return cmp.Or(cmp.Compare(b.AgeMs, a.AgeMs), cmp.Compare(a.ID, b.ID)) })
	d.Rows, d.pageInfo = paginate(all, pr, "/transactions", "show", d.Show, "filter", d.Filter)
	s.render(q, "transactions", "Transactions", "transactions", d)
}

// brokerTxns is the transactional ids broker id coordinates that the
// user may describe and that hold filter; only those are described.
func brokerTxns(ctx context.Context, be *backend, id int32, filter string, now int64) ([]txnRow, error) {
	res, err := be.on(ctx, id, kmsg.NewPtrListTransactionsRequest())
	if err != nil {
		return nil, err
	}
	lr := res.(*kmsg.ListTransactionsResponse)
	if err := kerr.ErrorForCode(lr.ErrorCode); err != nil {
		return nil, fmt.Errorf("broker %d: list transactions: %w", id, err)
	}
	dr := kmsg.NewPtrDescribeTransactionsRequest()
	for _, t := range lr.TransactionStates {
		if strings.Contains(t.TransactionalID, filter) && be.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, t.TransactionalID) {
			dr.TransactionalIDs = append(dr.TransactionalIDs, t.TransactionalID)
		}
	}
	if len(dr.TransactionalIDs) == 0 {
		return nil, nil
	}
	res, err = be.on(ctx, id, dr)
	if err != nil {
		return nil, err
	}
	var rows []txnRow
	for _, st := range res.(*kmsg.DescribeTransactionsResponse).TransactionStates {
		if kerr.ErrorForCode(st.ErrorCode) != nil {
			continue // gone or moved since it was listed
		}
		r := txnRow{ID: st.TransactionalID, State: st.State, ProducerID: st.ProducerID, Epoch: st.ProducerEpoch, Coordinator: id,
			StartMs: st.StartTimestamp, AgeMs: -1, TimeoutMs: st.TimeoutMillis}
		if r.StartMs >= 0 {
			r.AgeMs = max(0, now-r.StartMs)
			r.Hanging = r.AgeMs > int64(r.TimeoutMs)
		}
		for _, t := range st.Topics {
			// A peer answers the broker, not the user: leave out the
			// topics the user may not describe, as Kafka's handler does.
			if !be.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, t.Topic) {
				continue
			}
			for _, p := range t.Partitions {
				r.Partitions = append(r.Partitions, fmt.Sprintf("%s-%d", t.Topic, p))
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}
