package txn

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestValidateTimeout(t *testing.T) {
	max := 15 * time.Minute
	for _, tc := range []struct {
		ms int32
		ok bool
	}{{1, true}, {60000, true}, {900000, true}, {900001, false}, {0, false}, {-1, false}} {
		err := ValidateTimeout(tc.ms, max)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidTxnTimeout)) {
			t.Errorf("ValidateTimeout(%d) = %v, want ok %v", tc.ms, err, tc.ok)
		}
	}
}

// TestTimedOut runs a transaction on synctest's clock: it times out once
// more than its timeout has passed since it started, unless a change is
// in flight or it is not Ongoing.
func TestTimedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMetadata("tx", 1, 10_000, time.Now())
		mustComplete(t, m, mustPrepare(t)(m.PrepareIncrementProducerEpoch(10_000, NoProducerEpoch, time.Now())))
		mustComplete(t, m, mustPrepare(t)(m.PrepareAddPartitions([]TopicPartition{tpA}, time.Now(), TV2)))
		time.Sleep(5 * time.Second)
		// a second add does not restart the clock
		mustComplete(t, m, mustPrepare(t)(m.PrepareAddPartitions([]TopicPartition{tpB}, time.Now(), TV2)))
		time.Sleep(5 * time.Second)
		if m.TimedOut(time.Now()) {
			t.Fatal("timed out at exactly its timeout")
		}
		time.Sleep(time.Millisecond)
		if !m.TimedOut(time.Now()) {
			t.Fatal("not timed out past its timeout")
		}
		mustPrepare(t)(m.PrepareFenceProducerEpoch())
		if m.TimedOut(time.Now()) {
			t.Fatal("timed out while a fence is pending")
		}
		m.CancelTransition()
		tx := mustPrepare(t)(m.PrepareAbortOrCommit(PrepareCommit, TV2, NoProducerID, time.Now(), false))
		mustComplete(t, m, tx)
		if m.TimedOut(time.Now()) {
			t.Fatal("a committing transaction timed out")
		}
	})
}

// TestExpired: a transactional id with no open transaction expires
// transactional.id.expiration.ms after its last update.
func TestExpired(t *testing.T) {
	const expiration = 7 * 24 * time.Hour
	synctest.Test(t, func(t *testing.T) {
		m := NewMetadata("tx", 1, 10_000, time.Now())
		mustComplete(t, m, mustPrepare(t)(m.PrepareIncrementProducerEpoch(10_000, NoProducerEpoch, time.Now())))
		time.Sleep(expiration - time.Millisecond)
		if m.Expired(time.Now(), expiration) {
			t.Fatal("expired early")
		}
		time.Sleep(time.Millisecond)
		if !m.Expired(time.Now(), expiration) {
			t.Fatal("not expired after the expiration")
		}
		tx := mustPrepare(t)(m.PrepareAddPartitions([]TopicPartition{tpA}, time.Now(), TV2))
		if m.Expired(time.Now(), expiration) {
			t.Fatal("expired while a change is pending")
		}
		mustComplete(t, m, tx)
		time.Sleep(2 * expiration)
		if m.Expired(time.Now(), expiration) {
			t.Fatal("an ongoing transaction's id expired")
		}
		mustComplete(t, m, mustPrepare(t)(m.PrepareAbortOrCommit(PrepareAbort, TV2, NoProducerID, time.Now(), false)))
		mustComplete(t, m, mustPrepare(t)(m.PrepareComplete(time.Now())))
		time.Sleep(expiration)
		if !m.Expired(time.Now(), expiration) {
			t.Fatal("a completed transaction's id did not expire")
		}
		mustPrepare(t)(m.PrepareDead())
	})
}

// TestTimeoutSweepAborts follows the abort sweep on a timed-out
// transaction: fence its producer, abort at the fenced epoch, complete;
// the aborted transaction no longer times out and its producer is fenced.
func TestTimeoutSweepAborts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMetadata("tx", 1, 1000, time.Now())
		mustComplete(t, m, mustPrepare(t)(m.PrepareIncrementProducerEpoch(1000, NoProducerEpoch, time.Now())))
		mustComplete(t, m, mustPrepare(t)(m.PrepareAddPartitions([]TopicPartition{tpA}, time.Now(), TV2)))
		time.Sleep(1001 * time.Millisecond)
		if !m.TimedOut(time.Now()) {
			t.Fatal("not timed out")
		}
		fence := mustPrepare(t)(m.PrepareFenceProducerEpoch())
		res, err := m.PrepareEndTxn(EndRequest{ProducerID: 1, ProducerEpoch: fence.ProducerEpoch, Version: TV2}, ids(), time.Now())
		if err != nil || !res.Fence || res.Txn.State != PrepareAbort {
			t.Fatalf("sweep abort: %+v %v", res, err)
		}
		mustComplete(t, m, res.Txn)
		mustComplete(t, m, mustPrepare(t)(m.PrepareComplete(time.Now())))
		if m.State != CompleteAbort || m.TimedOut(time.Now()) {
			t.Fatalf("after the sweep: %s, timed out %v", m.State, m.TimedOut(time.Now()))
		}
		_, _, err = m.PrepareAddPartitionsToTxn(1, 0, []TopicPartition{tpB}, TV2, time.Now())
		wantErr(t, err, ErrProducerFenced)
	})
}
