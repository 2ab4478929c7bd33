package txn

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/internal/logbuf"
)

// TestStatsAndStateChangeLog: an open transaction counts as ongoing, a
// commit and an abort are counted once they complete, and each state
// change is logged at debug with the id, producer and both states.
func TestStatsAndStateChangeLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newCoordEnv(t, nil, nil)
		var buf logbuf.Buffer
		e.c.log = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		p := e.init("tx")
		if err := e.c.AddPartitions("tx", p.ProducerID, p.ProducerEpoch, []TopicPartition{tpA}, TV2); err != nil {
			t.Fatalf("AddPartitions: %v", err)
		}
		if s := e.c.Stats(); s.Ongoing != 1 || s.Committed != 0 || s.Aborted != 0 || s.Loads.Count != 1 {
			t.Fatalf("open: %+v", s)
		}
		res, err := e.c.EndTxn(context.Background(), "tx", p.ProducerID, p.ProducerEpoch, true, TV2)
		if err != nil {
			t.Fatalf("commit: %v", err)
		}
		synctest.Wait()
		if err := e.c.AddPartitions("tx", res.ProducerID, res.ProducerEpoch, []TopicPartition{tpA}, TV2); err != nil {
			t.Fatalf("AddPartitions: %v", err)
		}
		if _, err := e.c.EndTxn(context.Background(), "tx", res.ProducerID, res.ProducerEpoch, false, TV2); err != nil {
			t.Fatalf("abort: %v", err)
		}
		synctest.Wait()
		if s := e.c.Stats(); s.Ongoing != 0 || s.Committed != 1 || s.Aborted != 1 {
			t.Fatalf("after a commit and an abort: %+v", s)
		}
		for _, want := range []string{
			"transactional_id=tx producer_id=" + strconv.FormatInt(p.ProducerID, 10) + " producer_epoch=0 from=Empty to=Ongoing",
			"from=Ongoing to=PrepareCommit", "from=PrepareCommit to=CompleteCommit",
			"from=CompleteCommit to=Ongoing", "from=Ongoing to=PrepareAbort", "from=PrepareAbort to=CompleteAbort",
		} {
			if !strings.Contains(buf.String(), want) {
				t.Errorf("log lacks %q:\n%s", want, buf.String())
			}
		}
	})
}

// TestExpiryKeepsProducerInUse: transactional.id.expiration.ms removes an
// idle id but never one whose producer id is in use by an open
// transaction, however long it has been idle.
func TestExpiryKeepsProducerInUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newCoordEnv(t, nil, func(cfg *Config) { cfg.IDExpiration = time.Hour })
		p := e.init("open")
		if err := e.c.AddPartitions("open", p.ProducerID, p.ProducerEpoch, []TopicPartition{tpA}, TV2); err != nil {
			t.Fatalf("AddPartitions: %v", err)
		}
		e.init("idle")
		time.Sleep(2 * time.Hour) // no sweep runs: the open transaction is not timed out
		if n := e.c.ExpireIDs(); n != 1 {
			t.Fatalf("expired %d ids, want only the idle one", n)
		}
		_, err := e.c.Describe("idle")
		wantErr(t, err, ErrTransactionalIDNotFound)
		if d := e.describe("open"); d.State != Ongoing || d.ProducerID != p.ProducerID {
			t.Fatalf("open id after expiry: %+v", d)
		}
	})
}
