package handler

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDescribeTransactions(t *testing.T) {
	codes := func(r kmsg.Response) []int16 {
		var out []int16
		for _, st := range r.(*kmsg.DescribeTransactionsResponse).TransactionStates {
			out = append(out, st.ErrorCode)
		}
		return out
	}
	describe := func(t *testing.T, s *scene) kmsg.Request {
		initTxn(t, s, "tx")
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{"tx", "unknown"}
		return req
	}
	runRows(t, tableOpts{codes: codes}, []apiRow[*kmsg.DescribeTransactionsResponse]{
		{
			name: "a known and an unknown id", scene: txnScene, setup: withTxnCoordinator, req: describe,
			codes: []int16{0, kerr.TransactionalIDNotFound.Code},
			want: func(t *testing.T, _ *scene, r *kmsg.DescribeTransactionsResponse) {
				if st := r.TransactionStates[0]; st.State != "Empty" || st.ProducerID < 0 || st.ProducerEpoch != 0 || st.TimeoutMillis != 60000 || st.StartTimestamp != -1 {
					t.Fatalf("described %+v", st)
				}
			},
		},
	})
}
