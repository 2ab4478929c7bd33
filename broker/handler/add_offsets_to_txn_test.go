package handler

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
)

func TestAddOffsetsToTxn(t *testing.T) {
	codes := func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode} }
	add := func(id, g string) func(*testing.T, *scene) kmsg.Request {
		return func(t *testing.T, s *scene) kmsg.Request {
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, -1, -1, g
			if s.env.Txn.Loaded(0) {
				req.ProducerID, req.ProducerEpoch = initTxn(t, s, id)
			}
			return req
		}
	}
	runRows(t, tableOpts{codes: codes}, []apiRow[*kmsg.AddOffsetsToTxnResponse]{
		{
			name: "the group's offsets partition joins the transaction", scene: txnScene, setup: withTxnCoordinator,
			req:   add("tx", "g"),
			codes: []int16{0},
			want: func(t *testing.T, s *scene, _ *kmsg.AddOffsetsToTxnResponse) {
				d, err := s.env.Txn.Describe("tx")
				if err != nil || len(d.Partitions) != 1 || d.Partitions[0].Topic != group.TopicName || d.State.String() != "Ongoing" {
					t.Fatalf("described %+v, %v; want Ongoing over one %s partition", d, err, group.TopicName)
				}
			},
		},
		{
			name: "an unknown transactional id", scene: txnScene,
			req:   add("tx", "g"),
			codes: []int16{kerr.NotCoordinator.Code},
		},
	})
}
