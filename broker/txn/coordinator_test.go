package txn

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/broker/coordlog"
)

// TestLoadAndUnload: ids of a partition not led here answer
// ErrNotCoordinator, of a partition still loading ErrLoadInProgress; a
// resigned partition's ids are gone.
func TestLoadAndUnload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newCoordEnv(t, nil, nil)
		p := e.init("tx")
		if p.ProducerEpoch != 0 || p.ProducerID < 0 {
			t.Fatalf("InitProducerId: %+v, want a new producer at epoch 0", p)
		}
		if got := e.c.Led(); got[0] != 0 || len(got) != 1 {
			t.Fatalf("led %v", got)
		}
		e.c.Resign(0)
		_, err := e.c.Describe("tx")
		wantErr(t, err, ErrNotCoordinator)
		_, err = e.c.InitProducerID(context.Background(), "tx", 10_000, NoProducerID, NoProducerEpoch)
		wantErr(t, err, ErrNotCoordinator)

		// Loading blocks on the log: the partition answers
		// ErrLoadInProgress until the load is done.
		gate := &gatedLog{testLog: e.log, open: make(chan struct{})}
		e.c.Elect(0, 1, gate)
		synctest.Wait()
		_, err = e.c.Describe("tx")
		wantErr(t, err, ErrLoadInProgress)
		if _, loading := e.c.List(ListFilter{}); !loading {
			t.Fatal("List does not report the loading partition")
		}
		close(gate.open)
		synctest.Wait()
		if d := e.describe("tx"); d.ProducerID != p.ProducerID || d.State != Empty {
			t.Fatalf("reloaded: %+v", d)
		}
		e.c.Close()
		_, err = e.c.Describe("tx")
		wantErr(t, err, ErrCoordinatorNotAvailable)
	})
}

// gatedLog is a testLog whose first read waits for open.
type gatedLog struct {
	*testLog
	open chan struct{}
}

func (g *gatedLog) LogStartOffset() int64 {
	<-g.open
	return g.testLog.LogStartOffset()
}

// TestTransactionWritesAndCompletes runs a transaction: each step is
// logged and applied; EndTxn answers with the bumped epoch and the
// partitions to mark, and the transaction completes once the marker
// writer reports them written.
func TestTransactionWritesAndCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ml := &markerLog{}
		e := newCoordEnv(t, ml, nil)
		p := e.init("tx")
		leo := e.log.L.LogEndOffset()
		if err := e.c.AddPartitions("tx", p.ProducerID, p.ProducerEpoch, []TopicPartition{tpB, tpA}, TV2); err != nil {
			t.Fatalf("AddPartitions: %v", err)
		}
		if d := e.describe("tx"); d.State != Ongoing || len(d.Partitions) != 2 || d.StartMs < 0 {
			t.Fatalf("after AddPartitions: %+v", d)
		}
		if e.log.L.LogEndOffset() != leo+1 {
			t.Fatalf("AddPartitions wrote %d records", e.log.L.LogEndOffset()-leo)
		}
		// Partitions already in the transaction: nothing to write.
		if err := e.c.AddPartitions("tx", p.ProducerID, p.ProducerEpoch, []TopicPartition{tpA}, TV2); err != nil || e.log.L.LogEndOffset() != leo+1 {
			t.Fatalf("AddPartitions again: %v, log end %d", err, e.log.L.LogEndOffset())
		}
		res, err := e.c.EndTxn(context.Background(), "tx", p.ProducerID, p.ProducerEpoch, true, TV2)
		if err != nil {
			t.Fatalf("EndTxn: %v", err)
		}
		if res.ProducerID != p.ProducerID || res.ProducerEpoch != p.ProducerEpoch+1 || !slices.Equal(res.Markers, []TopicPartition{tpA, tpB}) {
			t.Fatalf("EndTxn: %+v", res)
		}
		if d := e.describe("tx"); d.State != PrepareCommit {
			t.Fatalf("before the markers: %s", d.State)
		}
		work, done := ml.take()
		if len(work) != 1 || !work[0].Commit || work[0].ProducerEpoch != res.ProducerEpoch || work[0].CoordinatorEpoch != 0 {
			t.Fatalf("marker work %+v", work)
		}
		done[0]()
		synctest.Wait()
		if d := e.describe("tx"); d.State != CompleteCommit || len(d.Partitions) != 0 {
			t.Fatalf("after the markers: %+v", d)
		}
		// The client's retry of the commit succeeds and writes nothing.
		leo = e.log.L.LogEndOffset()
		if r, err := e.c.EndTxn(context.Background(), "tx", p.ProducerID, p.ProducerEpoch, true, TV2); err != nil || len(r.Markers) != 0 || e.log.L.LogEndOffset() != leo {
			t.Fatalf("retried EndTxn: %+v %v", r, err)
		}
		// Unknown ids.
		wantErr(t, e.c.AddPartitions("other", 1, 0, []TopicPartition{tpA}, TV2), ErrInvalidProducerIDMapping)
		_, err = e.c.Describe("other")
		wantErr(t, err, ErrTransactionalIDNotFound)
		_, err = e.c.InitProducerID(context.Background(), "tx", 0, NoProducerID, NoProducerEpoch)
		wantErr(t, err, ErrInvalidTxnTimeout)
	})
}

// TestFailedWriteCancels: a transition whose write fails is not applied
// and leaves nothing pending.
func TestFailedWriteCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newCoordEnv(t, nil, nil)
		p := e.init("tx")
		e.log.SetFail(true)
		err := e.c.AddPartitions("tx", p.ProducerID, p.ProducerEpoch, []TopicPartition{tpA}, TV2)
		wantErr(t, err, ErrCoordinatorNotAvailable)
		if d := e.describe("tx"); d.State != Empty {
			t.Fatalf("after the failed write: %s", d.State)
		}
		_, err = e.c.InitProducerID(context.Background(), "tx", 10_000, p.ProducerID, p.ProducerEpoch)
		wantErr(t, err, ErrCoordinatorNotAvailable)
		e.log.SetFail(false)
		if err := e.c.AddPartitions("tx", p.ProducerID, p.ProducerEpoch, []TopicPartition{tpA}, TV2); err != nil {
			t.Fatalf("AddPartitions after the failure: %v", err)
		}
	})
}

// TestReloadRestoresEveryTransaction: a coordinator loading the log
// restores each id's state; a transaction that was ending gets its
// markers written again and completes.
func TestReloadRestoresEveryTransaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ml := &markerLog{}
		e := newCoordEnv(t, ml, nil)
		bg := context.Background()
		e.init("expired")
		time.Sleep(2 * time.Hour)
		e.init("empty")
		ongoing := e.init("ongoing")
		if err := e.c.AddPartitions("ongoing", ongoing.ProducerID, ongoing.ProducerEpoch, []TopicPartition{tpA, tpC}, TV2); err != nil {
			t.Fatal(err)
		}
		committed := e.init("committed")
		if err := e.c.AddPartitions("committed", committed.ProducerID, committed.ProducerEpoch, []TopicPartition{tpB}, TV2); err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.EndTxn(bg, "committed", committed.ProducerID, committed.ProducerEpoch, true, TV2); err != nil {
			t.Fatal(err)
		}
		_, done := ml.take()
		done[0]()
		synctest.Wait()
		aborting := e.init("aborting")
		if err := e.c.AddPartitions("aborting", aborting.ProducerID, aborting.ProducerEpoch, []TopicPartition{tpB}, TV2); err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.EndTxn(bg, "aborting", aborting.ProducerID, aborting.ProducerEpoch, false, TV2); err != nil {
			t.Fatal(err)
		}
		ml.take() // the markers are not written before the restart
		e.c.cfg.IDExpiration = time.Hour
		if n := e.c.ExpireIDs(); n != 1 {
			t.Fatalf("expired %d ids, want 1", n)
		}

		want := map[string]Description{}
		for _, id := range []string{"empty", "ongoing", "committed", "aborting"} {
			want[id] = e.describe(id)
		}
		e.restart()
		for id, w := range want {
			if got := e.describe(id); !equalDescription(got, w) {
				t.Errorf("%s after reload: %+v, want %+v", id, got, w)
			}
		}
		_, err := e.c.Describe("expired")
		wantErr(t, err, ErrTransactionalIDNotFound)
		work, done := ml.take()
		if len(work) != 1 || work[0].TransactionalID != "aborting" || work[0].Commit || !slices.Equal(work[0].Partitions, []TopicPartition{tpB}) {
			t.Fatalf("markers resent after the load: %+v", work)
		}
		done[0]()
		synctest.Wait()
		if d := e.describe("aborting"); d.State != CompleteAbort {
			t.Fatalf("aborting after its markers: %s", d.State)
		}
		if list, loading := e.c.List(ListFilter{States: []State{Ongoing}}); loading || len(list) != 1 || list[0].TransactionalID != "ongoing" {
			t.Fatalf("List(Ongoing): %+v loading %v", list, loading)
		}
	})
}

func equalDescription(a, b Description) bool {
	return a.TransactionalID == b.TransactionalID && a.State == b.State && a.ProducerID == b.ProducerID &&
		a.ProducerEpoch == b.ProducerEpoch && a.TimeoutMs == b.TimeoutMs && a.StartMs == b.StartMs &&
		slices.Equal(a.Partitions, b.Partitions)
}

// TestSweepAbortsTimedOutTransaction: the sweep, on synctest's clock,
// aborts a transaction open for longer than its timeout, fencing its
// producer.
func TestSweepAbortsTimedOutTransaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newCoordEnv(t, nil, func(cfg *Config) { cfg.AbortInterval = time.Second })
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go e.c.Sweep(ctx)
		p := e.init("tx")
		if err := e.c.AddPartitions("tx", p.ProducerID, p.ProducerEpoch, []TopicPartition{tpA}, TV2); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second) // the timeout, not yet past
		synctest.Wait()
		if d := e.describe("tx"); d.State != Ongoing {
			t.Fatalf("at its timeout: %s", d.State)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		d := e.describe("tx")
		if d.State != CompleteAbort || d.ProducerEpoch <= p.ProducerEpoch {
			t.Fatalf("after the sweep: %+v, want CompleteAbort past epoch %d", d, p.ProducerEpoch)
		}
		_, err := e.c.EndTxn(ctx, "tx", p.ProducerID, p.ProducerEpoch, true, TV2)
		wantErr(t, err, ErrProducerFenced)
		wantErr(t, e.c.AddPartitions("tx", p.ProducerID, p.ProducerEpoch, []TopicPartition{tpA}, TV2), ErrProducerFenced)
	})
}

// TestInitProducerIDFencesOngoing: InitProducerId of an id with an open
// transaction aborts it and answers CONCURRENT_TRANSACTIONS; the retry
// gets the epoch after the fence's and the abort's bumps. A fence whose
// write failed is not bumped again by the next attempt.
func TestInitProducerIDFencesOngoing(t *testing.T) {
	for _, failFirst := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			e := newCoordEnv(t, nil, nil)
			bg := context.Background()
			p := e.init("tx")
			if err := e.c.AddPartitions("tx", p.ProducerID, p.ProducerEpoch, []TopicPartition{tpA}, TV2); err != nil {
				t.Fatal(err)
			}
			if failFirst {
				e.log.SetFail(true)
				_, err := e.c.InitProducerID(bg, "tx", 10_000, NoProducerID, NoProducerEpoch)
				wantErr(t, err, ErrCoordinatorNotAvailable)
				e.log.SetFail(false)
			}
			_, err := e.c.InitProducerID(bg, "tx", 10_000, NoProducerID, NoProducerEpoch)
			wantErr(t, err, ErrConcurrentTransactions)
			synctest.Wait()
			// fence, abort (transaction version 2), InitProducerId: three bumps
			if q := e.init("tx"); q.ProducerID != p.ProducerID || q.ProducerEpoch != p.ProducerEpoch+3 {
				t.Fatalf("failed fence first %v: new producer %+v after fencing %+v", failFirst, q, p)
			}
			_, err = e.c.EndTxn(bg, "tx", p.ProducerID, p.ProducerEpoch, false, TV2)
			wantErr(t, err, ErrProducerFenced)
		})
	}
}

// TestExpiryWritesTombstone: the sweep removes an id idle for
// transactional.id.expiration.ms and logs its tombstone, so a reload
// does not find it.
func TestExpiryWritesTombstone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newCoordEnv(t, nil, func(cfg *Config) {
			cfg.IDExpiration, cfg.ExpiryInterval = time.Hour, 10*time.Minute
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go e.c.Sweep(ctx)
		e.init("tx")
		leo := e.log.L.LogEndOffset()
		time.Sleep(55 * time.Minute)
		synctest.Wait()
		e.describe("tx") // idle for 50 min at the last check
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		_, err := e.c.Describe("tx")
		wantErr(t, err, ErrTransactionalIDNotFound)
		if e.log.L.LogEndOffset() != leo+1 {
			t.Fatalf("expiry wrote %d records", e.log.L.LogEndOffset()-leo)
		}
		last := []byte("none")
		if err := coordlog.Replay(TopicName, e.log, func(k, v []byte) { last = v }); err != nil || last != nil {
			t.Fatalf("last record's value %q (%v), want a tombstone", last, err)
		}
		e.restart()
		_, err = e.c.Describe("tx")
		wantErr(t, err, ErrTransactionalIDNotFound)
	})
}

// TestCurrent: markers are current while their coordinator epoch is the
// one this broker coordinates the id's partition at, and no longer once
// the partition is reloaded at a new epoch, resigned or closed.
func TestCurrent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newCoordEnv(t, nil, nil)
		m := Markers{TransactionalID: "tx", CoordinatorEpoch: 0}
		if !e.c.Current(m) {
			t.Fatal("markers of the current epoch not current")
		}
		e.c.Elect(0, 1, e.log)
		synctest.Wait()
		if e.c.Current(m) || !e.c.Current(Markers{TransactionalID: "tx", CoordinatorEpoch: 1}) {
			t.Fatal("markers of epoch 0 current after the reload at epoch 1")
		}
		e.c.Resign(0)
		if e.c.Current(Markers{TransactionalID: "tx", CoordinatorEpoch: 1}) {
			t.Fatal("markers current after resigning")
		}
	})
}

// TestAwaitEnded: a transaction being committed can be waited for; the
// wait ends as its completion is logged, and an id not ending answers
// false at once.
func TestAwaitEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ml := &markerLog{}
		e := newCoordEnv(t, ml, nil)
		bg := context.Background()
		p := e.init("tx")
		if e.c.AwaitEnded(bg, "tx", time.Second) || e.c.AwaitEnded(bg, "unknown", time.Second) {
			t.Fatal("AwaitEnded of an id not ending reported a wait")
		}
		if err := e.c.AddPartitions("tx", p.ProducerID, p.ProducerEpoch, []TopicPartition{tpA}, TV2); err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.EndTxn(bg, "tx", p.ProducerID, p.ProducerEpoch, true, TV2); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		ended := make(chan bool)
		go func() { ended <- e.c.AwaitEnded(bg, "tx", time.Hour) }()
		synctest.Wait()
		time.Sleep(time.Minute)
		_, done := ml.take()
		done[0]()
		if !<-ended || time.Since(start) != time.Minute {
			t.Fatalf("AwaitEnded returned after %v, want a minute, when the markers were written", time.Since(start))
		}
		if d := e.describe("tx"); d.State != CompleteCommit {
			t.Fatalf("state %s after the markers", d.State)
		}
	})
}
