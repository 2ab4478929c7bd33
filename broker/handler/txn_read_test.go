package handler

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
)

// Transactions are set up on the partition's log directly: a
// transactional batch appended as leader opens the producer's
// transaction, and AppendMarker ends it as the coordinator's
// WriteTxnMarkers would.

// txnBatch is a transactional batch of producer pid at epoch 0 from
// sequence 0, one record per value.
func txnBatch(pid int64, values ...string) record.Batch { return txnBatchAt(pid, 0, values...) }

// txnBatchAt is a transactional batch of producer pid at epoch.
func txnBatchAt(pid int64, epoch int16, values ...string) record.Batch {
	return batchWith(record.BuildOptions{Idempotent: true, Transactional: true, ProducerID: pid, ProducerEpoch: epoch}, values...)
}

// withTxnRecords is a step appending a transactional batch to broker 1's
// partition as leader.
func withTxnRecords(topic string, idx int32, b record.Batch) step {
	return func(t *testing.T, s *scene) {
		t.Helper()
		if _, err := s.part(t, topic, idx).Append([]record.Batch{slices.Clone(b)}, t0); err != nil {
			t.Fatal(err)
		}
	}
}

// withTxnEnd is a step writing producer pid's COMMIT or ABORT marker to
// broker 1's partition. Its high watermark passes the marker with the
// next append.
func withTxnEnd(topic string, idx int32, pid int64, commit bool) step {
	return func(t *testing.T, s *scene) {
		t.Helper()
		p := s.part(t, topic, idx)
		if _, err := p.Log().AppendMarker(local.TxnMarker{ProducerID: pid, Commit: commit}, p.LeaderEpoch()); err != nil {
			t.Fatal(err)
		}
	}
}

// openTxn leaves t-0 with "a" at 0, producer 5's open transaction at 1-2
// and "b" at 3: high watermark 4, last stable offset 1.
var openTxn = steps(withTopic("t", 1, nil), withRecords("t", 0, batch("a")),
	withTxnRecords("t", 0, txnBatch(5, "x", "y")), withRecords("t", 0, batch("b")))

// abortedTxn is openTxn with the transaction aborted at 4 and "c" at 5:
// high watermark and last stable offset 6.
var abortedTxn = steps(openTxn, withTxnEnd("t", 0, 5, false), withRecords("t", 0, batch("c")))

// readCommitted makes a fetch read_committed.
var readCommitted fetchOption = func(req *kmsg.FetchRequest) { req.IsolationLevel = readCommittedLevel }

func TestFetchTransactions(t *testing.T) {
	runRows(t, tableOpts{}, []fetchRow{
		{
			name:  "the last stable offset stops at an open transaction",
			setup: openTxn,
			req:   func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 0}) },
			want:  checks(wantFetched(0, 0, 0, 1, 2, 3), wantLSO(4, 1), wantAborted(nil)),
		},
		{
			name:  "read_committed stops at the last stable offset",
			setup: openTxn,
			req:   func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 0}, readCommitted) },
			want: checks(wantFetched(0, 0, 0), wantLSO(4, 1), wantAborted([]int64{}),
				wantTook[*kmsg.FetchResponse](0)),
		},
		{
			name:   "read_committed waits at the last stable offset until the transaction ends",
			setup:  openTxn,
			req:    func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 1}, readCommitted) },
			during: steps(withTxnEnd("t", 0, 5, true), withRecords("t", 0, batch("c"))),
			want: checks(wantFetched(0, 0, 1, 2, 3, 4, 5), wantLSO(6, 6), wantAborted([]int64{}),
				wantTook[*kmsg.FetchResponse](0)),
		},
		{
			name:  "read_committed gets the aborted transactions of its range",
			setup: abortedTxn,
			req:   func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 0}, readCommitted) },
			want:  checks(wantFetched(0, 0, 0, 1, 2, 3, 4, 5), wantLSO(6, 6), wantAborted([]int64{5, 1})),
		},
		{
			name:  "read_committed past an aborted transaction gets none",
			setup: abortedTxn,
			req:   func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 5}, readCommitted) },
			want:  checks(wantFetched(0, 0, 5), wantAborted([]int64{})),
		},
		{
			name:  "read_uncommitted gets no aborted transactions",
			setup: abortedTxn,
			req:   func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 0}) },
			want:  checks(wantFetched(0, 0, 0, 1, 2, 3, 4, 5), wantLSO(6, 6), wantAborted(nil)),
		},
		{
			// The follower must copy the whole log, open transactions too.
			name:  "a follower's read_committed fetch reads up to the log end",
			setup: steps(rf2(nil), withRecords("t", 0, batch("a")), withTxnRecords("t", 0, txnBatch(5, "x", "y"))),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return fetchReq(s, fetchAt{"t", 0, 0}, asReplica(2), readCommitted)
			},
			want: checks(wantFetched(0, 0, 0, 1, 2), wantAborted(nil)),
		},
	})
}

// wantLSO checks the one partition's high watermark and last stable
// offset.
func wantLSO(hw, lso int64) check[*kmsg.FetchResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.FetchResponse) {
		t.Helper()
		sp := fetchPart(t, resp)
		if sp.HighWatermark != hw || sp.LastStableOffset != lso {
			t.Errorf("high watermark %d, last stable offset %d; want %d, %d", sp.HighWatermark, sp.LastStableOffset, hw, lso)
		}
	}
}

// wantAborted checks the one partition's aborted transactions, given as
// producer id, first offset pairs; nil wants none sent (null), empty an
// empty list.
func wantAborted(pairs []int64) check[*kmsg.FetchResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.FetchResponse) {
		t.Helper()
		sp := fetchPart(t, resp)
		var got []int64
		if sp.AbortedTransactions != nil {
			got = []int64{}
		}
		for _, a := range sp.AbortedTransactions {
			got = append(got, a.ProducerID, a.FirstOffset)
		}
		if !slices.Equal(got, pairs) || (got == nil) != (pairs == nil) {
			t.Errorf("aborted transactions %v, want %v", got, pairs)
		}
	}
}

func TestListOffsetsTransactions(t *testing.T) {
	at := func(timestamp int64, level int8) func(*testing.T, *scene) kmsg.Request {
		return func(*testing.T, *scene) kmsg.Request {
			req := listOffsetsReq("t", 0, timestamp)
			req.IsolationLevel = level
			return req
		}
	}
	fromV2 := versionsFrom(kmsg.ListOffsets, 2)
	runRows(t, tableOpts{}, []listOffsetsRow{
		{
			name:     "read_committed latest is the last stable offset",
			versions: fromV2,
			setup:    openTxn,
			req:      at(latestTimestamp, readCommittedLevel),
			want:     wantListed(0, 1, -1, 0),
		},
		{
			name:  "read_uncommitted latest is the high watermark",
			setup: openTxn,
			req:   at(latestTimestamp, 0),
			want:  wantListed(0, 4, -1, 0),
		},
		{
			name:     "read_committed latest without transactions is the high watermark",
			versions: fromV2,
			setup:    abortedTxn,
			req:      at(latestTimestamp, readCommittedLevel),
			want:     wantListed(0, 6, -1, 0),
		},
		{
			name:     "a read_committed lookup finds nothing past the last stable offset",
			versions: []int16{2, 4, 9},
			setup:    openTxn,
			req:      at(t0+1, readCommittedLevel),
			want:     wantListed(0, -1, -1, -1),
		},
		{
			name:     "a read_uncommitted lookup finds the open transaction's record",
			versions: []int16{2, 4, 9},
			setup:    openTxn,
			req:      at(t0+1, 0),
			want:     wantListed(0, 2, t0+1, 0),
		},
		{
			name:     "read_committed max timestamp past the last stable offset",
			versions: []int16{7, 9},
			setup:    openTxn,
			req:      at(maxTimestamp, readCommittedLevel),
			want:     wantListed(0, -1, -1, -1),
		},
	})
}

func TestProduceTransactions(t *testing.T) {
	txnReq := func(txnID *string) func(*testing.T, *scene) kmsg.Request {
		return func(_ *testing.T, s *scene) kmsg.Request {
			req := produceReq(s, 1, "t", 0, txnBatch(5, "x"))
			req.TransactionID = txnID
			return req
		}
	}
	refused := checks(wantProduced(kerr.TransactionalIDAuthorizationFailed.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0))
	runRows(t, tableOpts{}, []produceRow{
		{
			// Kafka's answer to a transactional batch without a
			// transactional id.
			name:  "a transactional batch without a transactional id",
			setup: withTopic("t", 1, nil),
			req:   txnReq(nil),
			want:  refused,
		},
		{
			// Verification (transaction.partition.verification.enable,
			// default true) cannot reach a coordinator: no
			// __transaction_state exists. Kafka's answer to old clients is
			// the retriable NOT_ENOUGH_REPLICAS.
			name:     "a transactional batch and no transaction coordinator",
			versions: []int16{3, 11},
			setup:    withTopic("t", 1, nil),
			req:      txnReq(kmsg.StringPtr("tx")),
			want:     checks(wantProduced(kerr.NotEnoughReplicas.Code, -1), wantLogEnd[*kmsg.ProduceResponse]("t", 0, 0)),
		},
	})
}
