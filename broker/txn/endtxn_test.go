package txn

import (
	"fmt"
	"math"
	"testing"
)

// endCase is one EndTxn against a fixture at producer 1000, epoch 5.
type endCase struct {
	state  State
	commit bool
	epoch  int16
	want   error // nil: a transition or a retry
	retry  bool
	to     State
}

func runEndCases(t *testing.T, v Version, cases []endCase) {
	t.Helper()
	for _, tc := range cases {
		what := "abort"
		if tc.commit {
			what = "commit"
		}
		t.Run(fmt.Sprintf("%s/%s/epoch %d", tc.state, what, tc.epoch), func(t *testing.T) {
			m := fixture(tc.state, v)
			res, err := m.PrepareEndTxn(EndRequest{ProducerID: 1000, ProducerEpoch: tc.epoch, Commit: tc.commit, Version: v, FromClient: true}, ids(), later)
			if tc.want != nil {
				wantErr(t, err, tc.want)
				if _, ok := m.Pending(); ok || m.ProducerEpoch != 5 {
					t.Fatal("a refused end changed the metadata")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Retry != tc.retry {
				t.Fatalf("retry %v, want %v", res.Retry, tc.retry)
			}
			if res.Retry {
				wantID, wantEpoch := int64(1000), int16(5)
				if !v.bumpsEpoch() {
					wantID, wantEpoch = NoProducerID, NoProducerEpoch
				}
				if res.ProducerID != wantID || res.ProducerEpoch != wantEpoch {
					t.Fatalf("retry answers producer %d epoch %d", res.ProducerID, res.ProducerEpoch)
				}
				if _, ok := m.Pending(); ok {
					t.Fatal("a retry left a pending state")
				}
				return
			}
			wantEpoch := int16(5)
			if v.bumpsEpoch() {
				wantEpoch = 6
			}
			if res.Txn.State != tc.to || res.Txn.ProducerEpoch != wantEpoch || res.Fence {
				t.Fatalf("target %s epoch %d fence %v", res.Txn.State, res.Txn.ProducerEpoch, res.Fence)
			}
			mustComplete(t, m, res.Txn)
		})
	}
}

// TestEndTxnV2 runs Kafka's version 2 table (a retry carries epoch 4,
// the epoch before the bump its first try made; the current is 5).
func TestEndTxnV2(t *testing.T) {
	runEndCases(t, TV2, []endCase{
		{state: Empty, commit: false, epoch: 4, want: ErrProducerFenced},
		{state: Empty, commit: false, epoch: 5, to: PrepareAbort},
		{state: Empty, commit: true, epoch: 4, want: ErrProducerFenced},
		{state: Empty, commit: true, epoch: 5, want: ErrInvalidTxnState},
		{state: CompleteAbort, commit: false, epoch: 4, retry: true},
		{state: CompleteAbort, commit: false, epoch: 5, to: PrepareAbort},
		{state: CompleteAbort, commit: true, epoch: 4, want: ErrInvalidTxnState},
		{state: CompleteAbort, commit: true, epoch: 5, want: ErrInvalidTxnState},
		{state: CompleteCommit, commit: false, epoch: 4, want: ErrInvalidTxnState},
		{state: CompleteCommit, commit: false, epoch: 5, to: PrepareAbort},
		{state: CompleteCommit, commit: true, epoch: 4, retry: true},
		{state: CompleteCommit, commit: true, epoch: 5, want: ErrInvalidTxnState},
		{state: Ongoing, commit: true, epoch: 5, to: PrepareCommit},
		{state: Ongoing, commit: false, epoch: 5, to: PrepareAbort},
		{state: Ongoing, commit: true, epoch: 4, want: ErrProducerFenced},
		{state: Ongoing, commit: true, epoch: 6, want: ErrProducerFenced},
		{state: PrepareCommit, commit: true, epoch: 4, want: ErrConcurrentTransactions},
		{state: PrepareCommit, commit: true, epoch: 5, want: ErrProducerFenced},
		{state: PrepareCommit, commit: false, epoch: 4, want: ErrInvalidTxnState},
		{state: PrepareAbort, commit: false, epoch: 4, want: ErrConcurrentTransactions},
		{state: PrepareAbort, commit: true, epoch: 4, want: ErrInvalidTxnState},
		{state: Dead, commit: true, epoch: 5, want: ErrIllegalTransition},
	})
}

// TestEndTxnV1: no epoch bump; a repeated end of the completed
// transaction succeeds; the epoch must be the current one.
func TestEndTxnV1(t *testing.T) {
	runEndCases(t, TV1, []endCase{
		{state: Ongoing, commit: true, epoch: 5, to: PrepareCommit},
		{state: Ongoing, commit: false, epoch: 5, to: PrepareAbort},
		{state: Ongoing, commit: true, epoch: 4, want: ErrProducerFenced},
		{state: Ongoing, commit: true, epoch: 6, want: ErrProducerFenced},
		{state: CompleteCommit, commit: true, epoch: 5, retry: true},
		{state: CompleteCommit, commit: false, epoch: 5, want: ErrInvalidTxnState},
		{state: CompleteAbort, commit: false, epoch: 5, retry: true},
		{state: CompleteAbort, commit: true, epoch: 5, want: ErrInvalidTxnState},
		{state: PrepareCommit, commit: true, epoch: 5, want: ErrConcurrentTransactions},
		{state: PrepareCommit, commit: false, epoch: 5, want: ErrInvalidTxnState},
		{state: PrepareAbort, commit: false, epoch: 5, want: ErrConcurrentTransactions},
		{state: PrepareAbort, commit: true, epoch: 5, want: ErrInvalidTxnState},
		{state: Empty, commit: false, epoch: 5, want: ErrInvalidTxnState},
		{state: Empty, commit: true, epoch: 5, want: ErrInvalidTxnState},
		{state: Dead, commit: true, epoch: 5, want: ErrIllegalTransition},
	})
}

func TestEndTxnChecksProducer(t *testing.T) {
	for _, v := range []Version{TV1, TV2} {
		m := fixture(Ongoing, v)
		_, err := m.PrepareEndTxn(EndRequest{ProducerID: 999, ProducerEpoch: 5, Commit: true, Version: v, FromClient: true}, ids(), later)
		wantErr(t, err, ErrInvalidProducerIDMapping)
		mustPrepare(t)(m.PrepareAddPartitions(nil, later, v))
		_, err = m.PrepareEndTxn(EndRequest{ProducerID: 1000, ProducerEpoch: 5, Commit: true, Version: v, FromClient: true}, ids(), later)
		wantErr(t, err, ErrConcurrentTransactions)
	}
}

// TestEndTxnV2Overflow: an end at the last epoch takes a new producer id,
// which the completion moves to; the retry of that end, with the old id
// and epoch, is recognised.
func TestEndTxnV2Overflow(t *testing.T) {
	m := fixture(Ongoing, TV2)
	m.ProducerEpoch, m.LastProducerEpoch = math.MaxInt16-1, math.MaxInt16-2
	req := EndRequest{ProducerID: 1000, ProducerEpoch: math.MaxInt16 - 1, Commit: true, Version: TV2, FromClient: true}
	res, err := m.PrepareEndTxn(req, ids(), later)
	if err != nil || res.Txn.NextProducerID != 2000 || res.Txn.ProducerEpoch != math.MaxInt16 {
		t.Fatalf("end: %+v %v", res.Txn, err)
	}
	mustComplete(t, m, res.Txn)
	mustComplete(t, m, mustPrepare(t)(m.PrepareComplete(later)))
	if m.ProducerID != 2000 || m.ProducerEpoch != 0 {
		t.Fatalf("after completion producer %d epoch %d", m.ProducerID, m.ProducerEpoch)
	}
	res, err = m.PrepareEndTxn(req, ids(), later)
	if err != nil || !res.Retry || res.ProducerID != 2000 || res.ProducerEpoch != 0 {
		t.Fatalf("retry: %+v %v", res, err)
	}
	_, err = m.PrepareEndTxn(EndRequest{ProducerID: 1000, ProducerEpoch: 3, Commit: true, Version: TV2, FromClient: true}, ids(), later)
	wantErr(t, err, ErrInvalidProducerIDMapping)

	m = fixture(Ongoing, TV2)
	m.ProducerEpoch = math.MaxInt16 - 1
	req.Commit = false
	if _, err := m.PrepareEndTxn(req, failingIDs, later); err == nil {
		t.Fatal("an exhausting end with no producer id to move to succeeded")
	}
}

// TestFenceAndAbort: InitProducerId on an ongoing transaction fences its
// producer, the coordinator aborts the transaction at the fenced epoch,
// and the old producer can no longer end it; its next InitProducerId
// bumps the epoch once more.
func TestFenceAndAbort(t *testing.T) {
	for _, tc := range []struct {
		v                     Version
		abortEpoch, initEpoch int16
	}{{TV1, 6, 7}, {TV2, 7, 8}} {
		m := fixture(Ongoing, tc.v)
		fence := mustPrepare(t)(m.PrepareInitProducerID(30000, NoProducerID, NoProducerEpoch, ids(), later))
		if fence.State != PrepareEpochFence || fence.ProducerEpoch != 6 {
			t.Fatalf("v%d fence %+v", tc.v, fence)
		}
		// The zombie's commit while the fence is pending is retried.
		_, err := m.PrepareEndTxn(EndRequest{ProducerID: 1000, ProducerEpoch: 5, Commit: true, Version: tc.v, FromClient: true}, ids(), later)
		wantErr(t, err, ErrConcurrentTransactions)
		res, err := m.PrepareEndTxn(EndRequest{ProducerID: 1000, ProducerEpoch: fence.ProducerEpoch, Version: tc.v}, ids(), later)
		if err != nil || !res.Fence || res.Txn.State != PrepareAbort || res.Txn.ProducerEpoch != tc.abortEpoch {
			t.Fatalf("v%d abort: %+v %v", tc.v, res, err)
		}
		mustComplete(t, m, res.Txn)
		mustComplete(t, m, mustPrepare(t)(m.PrepareComplete(later)))
		_, err = m.PrepareEndTxn(EndRequest{ProducerID: 1000, ProducerEpoch: 5, Commit: true, Version: tc.v, FromClient: true}, ids(), later)
		wantErr(t, err, ErrProducerFenced)
		tx := mustPrepare(t)(m.PrepareInitProducerID(30000, NoProducerID, NoProducerEpoch, ids(), later))
		if tx.ProducerEpoch != tc.initEpoch {
			t.Fatalf("v%d init after the abort: epoch %d", tc.v, tx.ProducerEpoch)
		}
	}
}

// TestFenceWriteFails: when the abort that carries a fence is not
// logged, the next fence does not bump the epoch a second time.
func TestFenceWriteFails(t *testing.T) {
	m := fixture(Ongoing, TV1)
	fence := mustPrepare(t)(m.PrepareInitProducerID(30000, NoProducerID, NoProducerEpoch, ids(), later))
	res, err := m.PrepareEndTxn(EndRequest{ProducerID: 1000, ProducerEpoch: fence.ProducerEpoch, Version: TV1}, ids(), later)
	if err != nil || !res.Fence {
		t.Fatalf("abort: %+v %v", res, err)
	}
	m.FenceFailed()
	again := mustPrepare(t)(m.PrepareInitProducerID(30000, NoProducerID, NoProducerEpoch, ids(), later))
	if again.ProducerEpoch != fence.ProducerEpoch {
		t.Fatalf("second fence at epoch %d, want %d", again.ProducerEpoch, fence.ProducerEpoch)
	}
}
