package handler

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/txn"
	"github.com/strata-broker/strata/broker/txnmarkers"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/record"
)

type writeTxnMarkersRow = apiRow[*kmsg.WriteTxnMarkersResponse]

func TestWriteTxnMarkers(t *testing.T) {
	runRows(t, tableOpts{codes: errorCodes}, writeTxnMarkersRows())
}

// txnPID and txnEpoch are the producer of the transactions of the table.
const (
	txnPID   = 7
	txnEpoch = 3
)

func writeTxnMarkersRows() []writeTxnMarkersRow {
	open := steps(withTopic("t", 1, nil), withTxnRecords("t", 0, txnBatchAt(txnPID, txnEpoch, "a", "b")))
	return []writeTxnMarkersRow{
		{
			name:  "commit appends a control batch",
			setup: open,
			req:   func(*testing.T, *scene) kmsg.Request { return markersReq(true, txnEpoch, 5, "t", 0) },
			codes: []int16{0},
			want: checks(wantControlBatch(2, true, 5), wantLogEnd[*kmsg.WriteTxnMarkersResponse]("t", 0, 3),
				wantIndexedAborts(0)),
		},
		{
			name:  "abort adds to the transaction index",
			setup: open,
			req:   func(*testing.T, *scene) kmsg.Request { return markersReq(false, txnEpoch, 5, "t", 0) },
			codes: []int16{0},
			want:  checks(wantControlBatch(2, false, 5), wantIndexedAborts(1)),
		},
		{
			// Kafka writes the marker of a producer without a transaction
			// here (the partition may have been added but not written).
			name:  "marker of an empty transaction",
			setup: withTopic("t", 1, nil),
			req:   func(*testing.T, *scene) kmsg.Request { return markersReq(false, txnEpoch, 5, "t", 0) },
			codes: []int16{0},
			want:  checks(wantControlBatch(0, false, 5), wantIndexedAborts(0)),
		},
		{
			name:  "older producer epoch",
			setup: open,
			req:   func(*testing.T, *scene) kmsg.Request { return markersReq(true, txnEpoch-1, 5, "t", 0) },
			codes: []int16{kerr.InvalidProducerEpoch.Code},
			want:  wantLogEnd[*kmsg.WriteTxnMarkersResponse]("t", 0, 2),
		},
		{
			name: "older coordinator epoch",
			setup: steps(open, func(t *testing.T, s *scene) {
				if code := errorCodes(s.do(t, markersReq(false, txnEpoch, 5, "t", 0))); code[0] != 0 {
					t.Fatalf("first marker: %v", kerr.ErrorForCode(code[0]))
				}
			}),
			req:   func(*testing.T, *scene) kmsg.Request { return markersReq(true, txnEpoch, 4, "t", 0) },
			codes: []int16{kerr.TransactionCoordinatorFenced.Code},
			want:  wantLogEnd[*kmsg.WriteTxnMarkersResponse]("t", 0, 3),
		},
		{
			name:  "unknown topic",
			req:   func(*testing.T, *scene) kmsg.Request { return markersReq(true, txnEpoch, 5, "nope", 0) },
			codes: []int16{kerr.UnknownTopicOrPartition.Code},
		},
		{
			name:  "unknown partition",
			setup: withTopic("t", 1, nil),
			req:   func(*testing.T, *scene) kmsg.Request { return markersReq(true, txnEpoch, 5, "t", 1) },
			codes: []int16{kerr.UnknownTopicOrPartition.Code},
		},
		{
			name:  "partition not hosted here",
			setup: steps(withPeer(2, nil), withAssignedTopic("t", map[int32][]int32{0: {2}}, nil)),
			req:   func(*testing.T, *scene) kmsg.Request { return markersReq(true, txnEpoch, 5, "t", 0) },
			codes: []int16{kerr.UnknownTopicOrPartition.Code},
		},
		{
			name:  "follower",
			setup: steps(withPeer(2, nil), withAssignedTopic("t", map[int32][]int32{0: {2, 1}}, nil)),
			req:   func(*testing.T, *scene) kmsg.Request { return markersReq(true, txnEpoch, 5, "t", 0) },
			codes: []int16{kerr.NotLeaderForPartition.Code},
			want:  wantLogEnd[*kmsg.WriteTxnMarkersResponse]("t", 0, 0),
		},
		{
			name:  "below min.insync.replicas",
			setup: withTopic("t", 1, map[string]string{"min.insync.replicas": "2"}),
			req:   func(*testing.T, *scene) kmsg.Request { return markersReq(true, txnEpoch, 5, "t", 0) },
			codes: []int16{kerr.NotEnoughReplicas.Code},
			want:  wantLogEnd[*kmsg.WriteTxnMarkersResponse]("t", 0, 0),
		},
		{
			// acks=all, as Kafka's appendRecords for the coordinator.
			name:   "waits for the follower",
			setup:  steps(rf2(nil), withTxnRecords("t", 0, txnBatchAt(txnPID, txnEpoch, "a")), func(t *testing.T, s *scene) { s.followerFetch(t, 2, "t", 0, 1) }),
			req:    func(*testing.T, *scene) kmsg.Request { return markersReq(true, txnEpoch, 5, "t", 0) },
			during: func(t *testing.T, s *scene) { s.followerFetch(t, 2, "t", 0, 2) },
			codes:  []int16{0},
			want:   checks(wantTook[*kmsg.WriteTxnMarkersResponse](0), wantControlBatch(1, true, 5)),
		},
		{
			name:  "times out without the follower",
			setup: steps(rf2(nil), withTxnRecords("t", 0, txnBatchAt(txnPID, txnEpoch, "a"))),
			req:   func(*testing.T, *scene) kmsg.Request { return markersReq(true, txnEpoch, 5, "t", 0) },
			codes: []int16{kerr.RequestTimedOut.Code},
			want:  wantTook[*kmsg.WriteTxnMarkersResponse](markerTimeout),
		},
		{
			name:   "a leader change ends the wait",
			setup:  steps(rf2(nil), withTxnRecords("t", 0, txnBatchAt(txnPID, txnEpoch, "a"))),
			req:    func(*testing.T, *scene) kmsg.Request { return markersReq(true, txnEpoch, 5, "t", 0) },
			during: withState("t", 0, func(st *metadata.PartitionState) { st.Leader, st.LeaderEpoch = 2, st.LeaderEpoch+1 }),
			codes:  []int16{kerr.NotLeaderForPartition.Code},
			want:   wantTook[*kmsg.WriteTxnMarkersResponse](0),
		},
		{
			name: "several markers and partitions",
			setup: steps(withTopic("t", 2, nil), withTxnRecords("t", 0, txnBatchAt(txnPID, txnEpoch, "a")),
				withTxnRecords("t", 1, txnBatchAt(txnPID, txnEpoch, "b"))),
			req: func(*testing.T, *scene) kmsg.Request {
				req := markersReq(true, txnEpoch, 5, "t", 0, 1, 2)
				req.Markers = append(req.Markers, markersReq(false, 0, 5, "nope", 0).Markers...)
				return req
			},
			codes: []int16{0, 0, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code},
			want: func(t *testing.T, s *scene, resp *kmsg.WriteTxnMarkersResponse) {
				if len(resp.Markers) != 2 || resp.Markers[0].ProducerID != txnPID || resp.Markers[1].Topics[0].Topic != "nope" {
					t.Errorf("answer %+v, want the markers in request order", resp.Markers)
				}
				for idx := range int32(2) {
					if leo := s.part(t, "t", idx).Log().LogEndOffset(); leo != 2 {
						t.Errorf("log end of t-%d: %d, want 2", idx, leo)
					}
				}
			},
		},
	}
}

// markersReq is a WriteTxnMarkers of one marker of producer txnPID, at
// producer epoch epoch and coordinator epoch coord, for partitions of
// topic.
func markersReq(commit bool, epoch int16, coord int32, topic string, parts ...int32) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = txnPID, epoch, commit, coord
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, parts
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	return req
}

// wantControlBatch checks that t-0 holds at offset the marker's control
// batch, as a read_uncommitted fetch sees it.
func wantControlBatch(offset int64, commit bool, coord int32) check[*kmsg.WriteTxnMarkersResponse] {
	return func(t *testing.T, s *scene, _ *kmsg.WriteTxnMarkersResponse) {
		t.Helper()
		req := fetchReq(s, fetchAt{"t", 0, offset})
		req.SetVersion(12)
		req.MaxWaitMillis = 0
		sp := fetchPart(t, s.do(t, req).(*kmsg.FetchResponse))
		batches, err := record.Split(sp.RecordBatches)
		if err != nil || sp.ErrorCode != 0 || len(batches) != 1 {
			t.Fatalf("fetch at %d: error %d, %d batches, %v", offset, sp.ErrorCode, len(batches), err)
		}
		b := batches[0]
		m, ok, err := b.EndTxnMarker()
		if !b.IsControl() || !ok || err != nil || b.BaseOffset() != offset || b.ProducerID() != txnPID || b.ProducerEpoch() != txnEpoch {
			t.Fatalf("batch at %d: control %v, marker %v %v, base %d, producer %d/%d", offset, b.IsControl(), ok, err, b.BaseOffset(), b.ProducerID(), b.ProducerEpoch())
		}
		if m.Commit != commit || m.CoordinatorEpoch != coord {
			t.Errorf("marker %+v, want commit %v at coordinator epoch %d", m, commit, coord)
		}
	}
}

// wantAborted checks how many aborted transactions t-0's transaction
// index holds.
func wantIndexedAborts(n int) check[*kmsg.WriteTxnMarkersResponse] {
	return func(t *testing.T, s *scene, _ *kmsg.WriteTxnMarkersResponse) {
		t.Helper()
		res := s.part(t, "t", 0).Log().CollectAbortedTxns(0, 1<<62)
		if len(res.Aborted) != n {
			t.Errorf("aborted transactions %+v, want %d", res.Aborted, n)
		}
	}
}

// TestMarkerWriter: the coordinator's marker writer (broker/txnmarkers)
// ends a transaction over two partitions, one led by this broker (served
// in process, Local) and one by broker 2 (through its peers), and calls
// done once both hold the marker and replicated it.
func TestMarkerWriter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScene(t, sceneOpts{}, 1)
		b2 := s.peer(t, 2, nil)
		withAssignedTopic("t", map[int32][]int32{0: {1}, 1: {2}}, nil)(t, s)
		withTxnRecords("t", 0, txnBatchAt(txnPID, txnEpoch, "a"))(t, s)
		p1, ok := b2.env.Partitions.Get("t", 1)
		if !ok {
			t.Fatal("broker 2 has no partition t-1")
		}
		if _, err := p1.Append([]record.Batch{txnBatchAt(txnPID, txnEpoch, "b")}, t0); err != nil {
			t.Fatalf("append to broker 2: %v", err)
		}

		w := txnmarkers.New(txnmarkers.Config{NodeID: 1, Cache: s.env.Cache, Local: Local{Env: s.env},
			Peers: &inProcessPeers{brokers: map[int32]*testBroker{2: b2}}})
		defer w.Close()
		done := make(chan struct{})
		w.WriteMarkers(txn.Markers{TransactionalID: "tx", ProducerID: txnPID, ProducerEpoch: txnEpoch, CoordinatorEpoch: 5,
			Partitions: []txn.TopicPartition{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}}, func() { close(done) })
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("markers not written")
		}
		wantControlBatch(1, false, 5)(t, s, nil)
		wantIndexedAborts(1)(t, s, nil)
		if p1.Log().LogEndOffset() != 2 || p1.HighWatermark() != 2 {
			t.Fatal("broker 2's t-1 has no replicated marker")
		}
	})
}
