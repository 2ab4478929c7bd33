package compaction

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
)

// diskBatches returns every batch stored in l's segments, oldest first,
// including empty batches (which a read by offset may step over).
func diskBatches(t *testing.T, l *local.Log) []record.Batch {
	t.Helper()
	var out []record.Batch
	for _, s := range l.Segments() {
		sl, err := l.ReadSegment(s)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, sl.Len)
		_, err = sl.File.ReadAt(buf, sl.Pos)
		sl.Release()
		if err != nil {
			t.Fatalf("read segment %d: %v", s.BaseOffset, err)
		}
		bs, err := record.Split(buf)
		if err != nil {
			t.Fatalf("split segment %d: %v", s.BaseOffset, err)
		}
		out = append(out, bs...)
	}
	return out
}

// emptyBatches returns the batches of l that hold no record.
func emptyBatches(t *testing.T, l *local.Log) []record.Batch {
	t.Helper()
	var out []record.Batch
	for _, b := range diskBatches(t, l) {
		if b.NumRecords() == 0 {
			out = append(out, b)
		}
	}
	return out
}

// emptySegments counts the sealed segments of l that hold no batch.
func emptySegments(l *local.Log) int {
	segs := l.Segments()
	n := 0
	for _, s := range segs[:len(segs)-1] {
		if s.Size == 0 {
			n++
		}
	}
	return n
}

// TestNoEmptyBatchesLeft: on a compacted topic with small segments written
// by a producer that is not idempotent, where most records are overwritten
// and some keys deleted, cleaning leaves no empty batch (Kafka keeps one
// only as an active idempotent producer's newest batch), yet every
// surviving key reads back with its latest value and the log end stays.
func TestNoEmptyBatchesLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPart(t, 1024, compactCfg("delete.retention.ms", "0"))
		const keys, rounds = 40, 8
		want := map[string]string{}
		for round := range rounds {
			for k := 0; k < keys; {
				// Batches of one to three records, so that some batches lose
				// only part of their records.
				n := min(1+(k+round)%3, keys-k)
				recs := make([]kv, n)
				for i := range recs {
					kk := k + i
					v := fmt.Appendf(nil, "v%d-%d", kk, round)
					if round == rounds-1 && kk%5 == 0 {
						v = nil // deleted
					}
					recs[i] = kv{key: key(kk), value: v, ts: nowMs()}
					if v == nil {
						delete(want, string(key(kk)))
					} else {
						want[string(key(kk))] = string(v)
					}
				}
				appendKV(t, p.l, record.None, recs...)
				k += n
			}
		}
		roll(t, p)
		want["roll"] = "r"
		leo := p.l.LogEndOffset()
		c := NewCleaner(settings(), source(p))
		// The first pass stamps the tombstones' horizons (now + 0), the
		// second drops them, the third merges what is left.
		for pass := range 3 {
			st := cleanNow(t, c, p)
			time.Sleep(time.Millisecond)
			if e := emptyBatches(t, p.l); len(e) != 0 {
				t.Fatalf("pass %d: %d empty batches left, first at %d", pass, len(e), e[0].BaseOffset())
			}
			got := latest(readLog(t, p.l))
			if len(got) != len(want) {
				t.Fatalf("pass %d: %d live keys, want %d", pass, len(got), len(want))
			}
			for k, v := range want {
				if got[k] != v {
					t.Fatalf("pass %d: key %s = %q, want %q", pass, k, got[k], v)
				}
			}
			if p.l.LogEndOffset() != leo {
				t.Fatalf("pass %d: log end %d, want %d", pass, p.l.LogEndOffset(), leo)
			}
			t.Logf("pass %d: removed %d records, %d tombstones; %d segments (%d empty), %d batches",
				pass, st.RecordsRemoved, st.TombstonesRemoved, len(p.l.Segments()), emptySegments(p.l), len(diskBatches(t, p.l)))
		}
	})
}

// TestFullyRemovedGroup: segments all of whose records are superseded are
// cleaned into empty segments (no batch at all, their base kept as name);
// reads from the log start step over them, the next pass merges them with
// their neighbours, and a restart, clean or not, gives the same log.
func TestFullyRemovedGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPart(t, 1024, compactCfg())
		overwrite(t, p, 30)
		roll(t, p)
		before := len(p.l.Segments())
		c := NewCleaner(settings(), source(p))
		cleanNow(t, c, p)
		empties := emptySegments(p.l)
		if empties == 0 {
			t.Fatalf("no segment cleaned down to nothing among %d", len(p.l.Segments()))
		}
		check := func(when string, l *local.Log) {
			t.Helper()
			recs := readLog(t, l)
			if len(recs) != 11 || recs[0].offset != 290 || l.LogEndOffset() != 301 {
				t.Fatalf("%s: %d records from %d, log end %d", when, len(recs), recs[0].offset, l.LogEndOffset())
			}
			if e := emptyBatches(t, l); len(e) != 0 {
				t.Fatalf("%s: %d empty batches", when, len(e))
			}
		}
		check("after cleaning", p.l)
		// A fetch from the log start skips the empty segments.
		sl, err := p.l.Read(p.l.LogStartOffset(), 1, p.l.LogEndOffset())
		if err != nil || sl.Len == 0 {
			t.Fatalf("read from the log start: %d bytes, %v", sl.Len, err)
		}
		sl.Release()
		cleanNow(t, c, p)
		after := len(p.l.Segments())
		if emptySegments(p.l) >= empties || after >= before {
			t.Fatalf("second pass left %d empty segments (was %d), %d segments (was %d)", emptySegments(p.l), empties, after, before)
		}
		check("after merging", p.l)
		t.Logf("%d segments; first pass left %d empty, second %d in %d", before, empties, emptySegments(p.l), after)

		dir := p.l.Dir()
		if err := p.l.Close(); err != nil {
			t.Fatal(err)
		}
		re, err := local.Open(dir, local.Config{SegmentBytes: 1024, IndexIntervalBytes: 256}, quiet)
		if err != nil {
			t.Fatal(err)
		}
		defer re.Close()
		check("after reopening", re)
	})
}
