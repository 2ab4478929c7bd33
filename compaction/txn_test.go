package compaction

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
)

// txnWriter writes the transactions of one producer id, numbering its
// batches.
type txnWriter struct {
	l   *local.Log
	pid int64
	seq int32
}

// send appends one transactional batch holding the key/value pairs
// (kvs alternate key and value) and returns its offset.
func (w *txnWriter) send(t *testing.T, kvs ...string) int64 {
	t.Helper()
	var recs []record.Record
	for i := 0; i+1 < len(kvs); i += 2 {
		recs = append(recs, record.Record{OffsetDelta: int32(i / 2), Key: []byte(kvs[i]), Value: []byte(kvs[i+1])})
	}
	b := record.NewBatch(record.BuildOptions{FirstTimestamp: nowMs(), Transactional: true, Idempotent: true,
		ProducerID: w.pid, BaseSequence: w.seq}, recs...)
	w.seq += int32(len(recs))
	res, err := w.l.AppendAsLeader([]record.Batch{b}, local.AppendOptions{LeaderEpoch: 1})
	if err != nil {
		t.Fatalf("append transactional batch of producer %d: %v", w.pid, err)
	}
	return res.FirstOffset
}

// end writes the producer's COMMIT or ABORT marker and returns its offset.
func (w *txnWriter) end(t *testing.T, commit bool) int64 {
	t.Helper()
	off, err := w.l.AppendMarker(local.TxnMarker{ProducerID: w.pid, Commit: commit}, 1)
	if err != nil {
		t.Fatalf("marker of producer %d: %v", w.pid, err)
	}
	return off
}

// replicated moves the log's high watermark to its end.
func replicated(l *local.Log) { l.OnHighWatermarkUpdated(l.LogEndOffset()) }

// markers returns the offsets of the control batches of l holding a
// marker record.
func markers(t *testing.T, l *local.Log) []int64 {
	t.Helper()
	var out []int64
	for _, b := range diskBatches(t, l) {
		if b.IsControl() && b.NumRecords() > 0 {
			out = append(out, b.BaseOffset())
		}
	}
	return out
}

// values returns the values of the records of l, in offset order.
func values(t *testing.T, l *local.Log) []string {
	t.Helper()
	var out []string
	for _, r := range readLog(t, l) {
		if !r.batch.IsControl() {
			out = append(out, string(r.key)+"="+string(r.value))
		}
	}
	return out
}

// TestCleanTransactions: records of an aborted transaction go (and never
// hide an older record of their key), committed ones are cleaned like
// others, the abort marker stays while its data does and then, with its
// index entry gone, until delete.retention.ms has passed; nothing at or
// past the first unstable offset is touched.
func TestCleanTransactions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPart(t, 1<<20, compactCfg("delete.retention.ms", "60000"))
		committed, aborted, open := &txnWriter{l: p.l, pid: 7}, &txnWriter{l: p.l, pid: 8}, &txnWriter{l: p.l, pid: 9}
		committed.send(t, "k1", "a1")
		aborted.send(t, "k1", "b1")
		committed.send(t, "k2", "a2")
		aborted.send(t, "k3", "b3")
		commitAt := committed.end(t, true)
		abortAt := aborted.end(t, false)
		appendKV(t, p.l, record.None, kv{key: []byte("k4"), value: []byte("plain"), ts: nowMs()})
		roll(t, p)
		// The second segment starts with an open transaction: nothing from
		// there on may be cleaned.
		openAt := open.send(t, "k4", "open")
		appendKV(t, p.l, record.None, kv{key: []byte("k4"), value: []byte("after"), ts: nowMs()})
		roll(t, p)
		// The producers' newest batches lie in the active segment.
		committed.send(t, "z7", "x")
		committed.end(t, true)
		aborted.send(t, "z8", "x")
		aborted.end(t, true)
		replicated(p.l)
		if fu, ok := p.l.FirstUnstableOffset(); !ok || fu != openAt {
			t.Fatalf("first unstable offset %d %v, want %d", fu, ok, openAt)
		}
		secondBase := p.l.Segments()[1].BaseOffset
		abortedEntries := p.l.CollectAbortedTxns(0, secondBase).Aborted
		if len(abortedEntries) != 1 || abortedEntries[0].LastOffset != abortAt {
			t.Fatalf("aborted transactions before cleaning: %+v", abortedEntries)
		}

		c := NewCleaner(settings(), source(p))
		st := cleanNow(t, c, p)
		if st.End != openAt || st.AbortedRemoved != 2 {
			t.Fatalf("first pass: end %d (want %d), aborted records removed %d", st.End, openAt, st.AbortedRemoved)
		}
		want := []string{"k1=a1", "k2=a2", "k4=plain", "roll=r", "k4=open", "k4=after", "roll=r", "z7=x", "z8=x"}
		if got := values(t, p.l); !slices.Equal(got, want) {
			t.Fatalf("after the first pass %v, want %v", got, want)
		}
		// The abort marker's data was still there when the pass reached it.
		if got := markers(t, p.l); !slices.Contains(got, abortAt) || !slices.Contains(got, commitAt) {
			t.Fatalf("markers after the first pass %v", got)
		}
		if got := p.l.CollectAbortedTxns(0, secondBase).Aborted; len(got) != 1 {
			t.Fatalf("index entries after the first pass %+v", got)
		}

		// The second pass finds the aborted data gone: the marker gets a
		// delete horizon, its index entry goes.
		cleanNow(t, c, p)
		if got := p.l.CollectAbortedTxns(0, secondBase).Aborted; len(got) != 0 {
			t.Fatalf("index entries after the second pass %+v", got)
		}
		if got := markers(t, p.l); !slices.Contains(got, abortAt) {
			t.Fatalf("abort marker removed before delete.retention.ms: markers %v", got)
		}
		if h := p.l.CleanerPoint().DeleteHorizonMs; h != nowMs()+60000 {
			t.Fatalf("checkpointed horizon %d, want %d", h, nowMs()+60000)
		}
		time.Sleep(59 * time.Second)
		if _, ok, _ := c.CleanDirtiest(context.Background()); ok {
			t.Fatal("cleaned before the marker's horizon")
		}
		time.Sleep(2 * time.Second)
		st, ok, err := c.CleanDirtiest(context.Background())
		if err != nil || !ok || st.MarkersRemoved != 1 {
			t.Fatalf("after the horizon: ok %v err %v stats %+v", ok, err, st)
		}
		got := markers(t, p.l)
		if slices.Contains(got, abortAt) || !slices.Contains(got, commitAt) {
			t.Fatalf("markers after the horizon %v: want the abort at %d gone, the commit at %d kept", got, abortAt, commitAt)
		}
		if got := values(t, p.l); !slices.Equal(got, want) {
			t.Fatalf("after the last pass %v, want %v", got, want)
		}
	})
}

// TestCleanCommitMarkerAfterItsData: a commit marker goes once every
// record of its transaction was superseded, after delete.retention.ms.
func TestCleanCommitMarkerAfterItsData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPart(t, 1<<20, compactCfg("delete.retention.ms", "0"))
		w := &txnWriter{l: p.l, pid: 3}
		w.send(t, "k", "old")
		commitAt := w.end(t, true)
		appendKV(t, p.l, record.None, kv{key: []byte("k"), value: []byte("new"), ts: nowMs()})
		roll(t, p)
		w.send(t, "z", "x")
		w.end(t, true)
		replicated(p.l)
		c := NewCleaner(settings(), source(p))
		cleanNow(t, c, p) // drops the superseded transactional record
		if got := markers(t, p.l); !slices.Contains(got, commitAt) {
			t.Fatalf("commit marker removed with its data still there: %v", got)
		}
		cleanNow(t, c, p) // stamps the horizon
		time.Sleep(time.Millisecond)
		st := cleanNow(t, c, p)
		if got := markers(t, p.l); slices.Contains(got, commitAt) || st.MarkersRemoved != 1 {
			t.Fatalf("commit marker still there after its horizon: markers %v, stats %+v", got, st)
		}
		if got, want := values(t, p.l), []string{"k=new", "roll=r", "z=x"}; !slices.Equal(got, want) {
			t.Fatalf("records %v, want %v", got, want)
		}
	})
}

// TestCleanKeepsProducerLastTxnBatch: an aborted batch that is its
// producer's newest stays, emptied, so the producer's sequence survives;
// its marker stays with it.
func TestCleanKeepsProducerLastTxnBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPart(t, 1<<20, compactCfg("delete.retention.ms", "0"))
		w := &txnWriter{l: p.l, pid: 4}
		last := w.send(t, "k", "aborted")
		abortAt := w.end(t, false)
		// Roll by size: an idle producer would expire.
		for i := 0; len(p.l.Segments()) < 2; i++ {
			appendKV(t, p.l, record.None, kv{key: []byte("filler"), value: make([]byte, 100), ts: nowMs()})
			if i > 20000 {
				t.Fatal("no roll")
			}
		}
		p.setConfig(t, compactCfg("delete.retention.ms", "0"))
		replicated(p.l)
		c := NewCleaner(settings(), source(p))
		for range 3 {
			cleanNow(t, c, p)
			time.Sleep(time.Millisecond)
		}
		var kept record.Batch
		for _, b := range diskBatches(t, p.l) {
			if b.ProducerID() == 4 && !b.IsControl() {
				kept = b
			}
		}
		if kept == nil || kept.BaseOffset() != last || kept.NumRecords() != 0 || kept.BaseSequence() != 0 || !kept.IsTransactional() {
			t.Fatalf("producer's newest batch: %v", kept)
		}
		if got := markers(t, p.l); !slices.Contains(got, abortAt) {
			t.Fatalf("abort marker of a kept batch removed: %v", got)
		}
		for _, r := range readLog(t, p.l) {
			if string(r.value) == "aborted" {
				t.Fatal("aborted record kept")
			}
		}
	})
}

// TestCleanKeepsProducerLastMarker: an abort that moved its producer to a
// new epoch, with no batch of that epoch after it, stays after its data
// and its delete horizon are gone: it holds the epoch that fences the
// producer's older instances.
func TestCleanKeepsProducerLastMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPart(t, 1<<20, compactCfg("delete.retention.ms", "0"))
		w := &txnWriter{l: p.l, pid: 6}
		w.send(t, "k", "aborted")
		abortAt, err := p.l.AppendMarker(local.TxnMarker{ProducerID: 6, ProducerEpoch: 1}, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; len(p.l.Segments()) < 2; i++ {
			appendKV(t, p.l, record.None, kv{key: []byte("filler"), value: make([]byte, 100), ts: nowMs()})
			if i > 20000 {
				t.Fatal("no roll")
			}
		}
		replicated(p.l)
		c := NewCleaner(settings(), source(p))
		for range 4 {
			cleanNow(t, c, p)
			time.Sleep(time.Millisecond)
		}
		if got := markers(t, p.l); !slices.Equal(got, []int64{abortAt}) {
			t.Fatalf("markers %v, want the producer's last at %d", got, abortAt)
		}
		for _, b := range diskBatches(t, p.l) {
			if b.ProducerID() == 6 && !b.IsControl() {
				t.Fatalf("aborted batch at %d kept", b.BaseOffset())
			}
		}
	})
}
