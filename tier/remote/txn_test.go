package remote

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
	"github.com/strata-broker/strata/tier/segment"
)

// txnProducer appends the transactional batches of one producer id.
type txnProducer struct {
	f   *fixture
	pid int64
	seq int32
}

// send appends one transactional batch of 600 bytes and returns its
// offset.
func (p *txnProducer) send() int64 {
	p.f.t.Helper()
	b := record.NewBatch(record.BuildOptions{FirstTimestamp: p.f.now.Load(), Transactional: true, Idempotent: true,
		ProducerID: p.pid, BaseSequence: p.seq}, record.Record{Key: []byte("k"), Value: bytes.Repeat([]byte{1}, 600)})
	p.seq++
	res, err := p.f.log.AppendAsLeader([]record.Batch{b}, local.AppendOptions{LeaderEpoch: p.f.epoch.Load(), Now: p.f.now.Load()})
	if err != nil {
		p.f.t.Fatalf("append for producer %d: %v", p.pid, err)
	}
	return res.FirstOffset
}

// end writes the producer's marker.
func (p *txnProducer) end(commit bool) int64 {
	p.f.t.Helper()
	off, err := p.f.log.AppendMarker(local.TxnMarker{ProducerID: p.pid, Commit: commit}, p.f.epoch.Load())
	if err != nil {
		p.f.t.Fatal(err)
	}
	return off
}

// overlapping keeps the entries of all overlapping [from, upTo).
func overlapping(all []segment.AbortedTxn, from, upTo int64) []segment.AbortedTxn {
	var out []segment.AbortedTxn
	for _, a := range all {
		if a.LastOffset >= from && a.FirstOffset < upTo {
			out = append(out, a)
		}
	}
	return out
}

// TestTxnIndexTiered: copies stop below the last stable offset; each
// copy of a segment with aborted transactions carries its .txnindex, and
// the reader collects the aborted transactions of a cold range from them
// as the local log would have; a copy without an index holds none.
func TestTxnIndexTiered(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	p1, p2 := &txnProducer{f: f, pid: 1}, &txnProducer{f: f, pid: 2}
	for i := range 12 {
		p1.send()
		p1.send()
		p1.end(i%3 != 0)
	}
	openAt := p2.send() // open: holds the last stable offset here
	for range 12 {
		p1.send()
		p1.send()
		p1.end(false)
	}
	f.log.OnHighWatermarkUpdated(f.log.LogEndOffset())
	if lso := f.log.LastStableOffset(f.log.LogEndOffset()); lso != openAt {
		t.Fatalf("last stable offset %d, want %d", lso, openAt)
	}
	all := f.log.CollectAbortedTxns(0, f.log.LogEndOffset()).Aborted
	if len(all) != 16 {
		t.Fatalf("%d aborted transactions in the log, want 16", len(all))
	}
	f.m.RunOnce(ctx)
	fin := finished(f.records())
	if len(fin) < 2 {
		t.Fatalf("%d copies", len(fin))
	}
	withIndex := 0
	for _, s := range fin {
		if s.EndOffset >= openAt {
			t.Fatalf("copy [%d, %d] reaches the last stable offset %d", s.BaseOffset, s.EndOffset, openAt)
		}
		if s.TxnIndex {
			withIndex++
		}
	}
	if n := countKeys(t, f.store, txnIndexSuffix); withIndex == 0 || n != withIndex {
		t.Fatalf("%d .txnindex objects, %d copies with an index", n, withIndex)
	}
	// Every cold range finds what the whole log's indexes hold, or, when
	// the copies run out first, a prefix of it (the rest is local).
	found := 0
	for _, s := range fin {
		for _, from := range []int64{s.BaseOffset, (s.BaseOffset + s.EndOffset) / 2} {
			res, err := f.m.Reader().CollectAbortedTxns(ctx, s, from, s.EndOffset+1)
			if err != nil {
				t.Fatal(err)
			}
			want := overlapping(all, from, s.EndOffset+1)
			if res.Complete && !slices.Equal(res.Aborted, want) || !res.Complete && !slices.Equal(res.Aborted, want[:min(len(res.Aborted), len(want))]) {
				t.Fatalf("copy [%d, %d] from %d: %+v (complete %v), want %+v", s.BaseOffset, s.EndOffset, from, res.Aborted, res.Complete, want)
			}
			found += len(res.Aborted)
		}
	}
	if found == 0 {
		t.Fatal("no aborted transaction found in the tier")
	}

	// Once the open transaction ends, the rest is copied.
	p2.end(true)
	f.log.OnHighWatermarkUpdated(f.log.LogEndOffset())
	f.m.RunOnce(ctx)
	fin = finished(f.records())
	last := f.log.Segments()[len(f.log.Segments())-1].BaseOffset
	if end := fin[len(fin)-1].EndOffset; end != last-1 {
		t.Fatalf("copied up to %d after the commit, want %d", end, last-1)
	}

	// Copies made without a transaction index (older uploads) read as
	// holding no aborted transaction.
	for _, s := range fin {
		if s.TxnIndex {
			s.TxnIndex = false
			if err := f.m.putRecord(ctx, f.id, &s, f.epoch.Load()); err != nil {
				t.Fatal(err)
			}
			if err := f.store.Delete(ctx, dir("t", f.id, 0)+s.Name()+txnIndexSuffix); err != nil {
				t.Fatal(err)
			}
		}
	}
	fin = finished(f.records())
	res, err := f.m.Reader().CollectAbortedTxns(ctx, fin[0], 0, fin[len(fin)-1].EndOffset+1)
	if err != nil || len(res.Aborted) != 0 || res.Complete {
		t.Fatalf("copies without an index: %+v, %v", res, err)
	}
}
