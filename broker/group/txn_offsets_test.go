package group

import (
	"testing"
	"testing/synctest"

	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/producer"
)

// txnCommit commits offsets in producer pid's transaction at epoch 0,
// without member checks.
func (e *env) txnCommit(group string, pid int64, offs ...CommitOffset) []error {
	return e.c.TxnCommitOffsets(TxnCommitRequest{Group: group, TransactionalID: "tx", ProducerID: pid,
		Generation: -1, Offsets: offs})
}

// marker writes producer pid's COMMIT or ABORT marker to the partition
// and tells the coordinator, as WriteTxnMarkers does.
func (e *env) marker(pid int64, commit bool) {
	e.t.Helper()
	if _, err := e.log.L.AppendMarker(local.TxnMarker{ProducerID: pid, Commit: commit}, 0); err != nil {
		e.t.Fatalf("marker: %v", err)
	}
	e.c.CompleteTxn(0, pid, commit)
}

// fetched is the visible offset of tp (-1: none) and whether a stable
// fetch finds it unstable.
func (e *env) fetched(group string, tp TopicPartition) (int64, bool) {
	e.t.Helper()
	got, unstable, err := e.c.FetchStableOffsetsAs(group, "", -1, []TopicPartition{tp}, true)
	wantErr(e.t, "fetch", err, nil)
	o, ok := got[tp]
	if !ok {
		return -1, unstable[tp]
	}
	return o.Offset, unstable[tp]
}

func wantFetched(t testing.TB, e *env, what, group string, tp TopicPartition, off int64, unstable bool) {
	t.Helper()
	if got, u := e.fetched(group, tp); got != off || u != unstable {
		t.Fatalf("%s: offset %d unstable %v, want %d %v", what, got, u, off, unstable)
	}
}

func TestTxnOffsetsPendingUntilMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		wantErr(t, "commit", e.txnCommit("g", 7, commit(tp0, offset(10, -1, "m")))[0], nil)
		wantFetched(t, e, "pending", "g", tp0, -1, true)
		if got, _ := e.c.FetchOffsets("g", nil); len(got) != 0 {
			t.Fatalf("pending offsets visible: %+v", got)
		}
		// A second commit of the same transaction: the coordinator numbers
		// it after the first in the log (a reused sequence would make it a
		// duplicate the log drops).
		wantErr(t, "commit tp1", e.txnCommit("g", 7, commit(tp1, offset(11, -1, "")))[0], nil)
		e.marker(7, true)
		wantFetched(t, e, "committed", "g", tp0, 10, false)
		e.restart()
		wantFetched(t, e, "tp0 reloaded", "g", tp0, 10, false)
		wantFetched(t, e, "tp1 reloaded", "g", tp1, 11, false)

		// The next transaction of the producer (same epoch) aborts.
		wantErr(t, "commit 2", e.txnCommit("g", 7, commit(tp0, offset(20, -1, "")))[0], nil)
		wantFetched(t, e, "second pending", "g", tp0, 10, true)
		e.marker(7, false)
		wantFetched(t, e, "aborted", "g", tp0, 10, false)
	})
}

// TestTxnOffsetsSupersededByLaterCommit: a non-transactional commit
// written after the transactional one wins at COMMIT, as Kafka keeps the
// later append; one written before loses.
func TestTxnOffsetsSupersededByLaterCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		simple := func(tp TopicPartition, off int64) {
			t.Helper()
			errs := e.c.CommitOffsets(CommitRequest{Group: "g", Generation: -1, Offsets: []CommitOffset{commit(tp, offset(off, -1, ""))}})
			wantErr(t, "simple commit", errs[0], nil)
		}
		simple(tp1, 1)
		e.txnCommit("g", 7, commit(tp0, offset(10, -1, "")), commit(tp1, offset(11, -1, "")))
		simple(tp0, 5)
		e.marker(7, true)
		wantFetched(t, e, "tp0 (later simple commit)", "g", tp0, 5, false)
		wantFetched(t, e, "tp1 (earlier simple commit)", "g", tp1, 11, false)
		e.restart()
		wantFetched(t, e, "tp0 after reload", "g", tp0, 5, false)
		wantFetched(t, e, "tp1 after reload", "g", tp1, 11, false)
	})
}

// TestTxnOffsetsReload: loading replays transactional batches and
// markers: committed ones visible, aborted ones gone, open ones pending
// and completed by a marker after the load.
func TestTxnOffsetsReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		e.txnCommit("committed", 1, commit(tp0, offset(10, -1, "")))
		e.txnCommit("aborted", 2, commit(tp0, offset(20, -1, "")))
		e.txnCommit("open", 3, commit(tp0, offset(30, -1, "")))
		e.marker(1, true)
		e.marker(2, false)
		e.restart()
		wantFetched(t, e, "committed", "committed", tp0, 10, false)
		wantFetched(t, e, "aborted", "aborted", tp0, -1, false)
		wantFetched(t, e, "open", "open", tp0, -1, true)
		e.marker(3, true)
		wantFetched(t, e, "open, committed after the load", "open", tp0, 30, false)
		e.restart()
		wantFetched(t, e, "open, reloaded", "open", tp0, 30, false)
	})
}

func TestTxnOffsetsFencing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		j := e.stableGroup("g")
		req := func(member string, gen int32) error {
			return e.c.TxnCommitOffsets(TxnCommitRequest{Group: "g", ProducerID: 9, Generation: gen, MemberID: member,
				Offsets: []CommitOffset{commit(tp0, offset(1, -1, ""))}})[0]
		}
		wantErr(t, "old generation", req(j.MemberID, j.Generation-1), ErrIllegalGeneration)
		wantErr(t, "unknown member", req("nobody", j.Generation), ErrUnknownMemberID)
		wantErr(t, "member at its generation", req(j.MemberID, j.Generation), nil)
		wantErr(t, "no member, no generation", req("", -1), nil)

		// A newer epoch of the producer fences the older one.
		wantErr(t, "epoch 1", e.c.TxnCommitOffsets(TxnCommitRequest{Group: "g", ProducerID: 9, ProducerEpoch: 1, Generation: -1,
			Offsets: []CommitOffset{commit(tp0, offset(2, -1, ""))}})[0], nil)
		wantErr(t, "epoch 0 after 1", req("", -1), producer.ErrInvalidProducerEpoch)
	})
}
