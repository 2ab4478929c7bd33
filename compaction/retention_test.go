package compaction

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
)

// fillAged appends n one-record batches whose timestamps step by stepMs
// from ts; segments of 1 KiB hold several of them.
func fillAged(t *testing.T, p *part, n int, ts, stepMs int64) {
	t.Helper()
	for i := range n {
		appendKV(t, p.l, record.None, kv{key: key(i), value: make([]byte, 100), ts: ts + int64(i)*stepMs})
	}
}

func sealedCount(l *local.Log) int { return len(l.Segments()) - 1 }

func TestRetentionByTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := nowMs()
		p := newPart(t, 1024, map[string]string{"retention.ms": "3600000"})
		// Records from 10 h ago to now, one per minute.
		fillAged(t, p, 600, t0-10*3600_000, 60_000)
		segs := p.l.Segments()
		r := NewRetention(settings(), source(p))
		st, err := r.RunOnce()
		if err != nil {
			t.Fatal(err)
		}
		if st.SegmentsDeleted == 0 || st.Partitions != 1 {
			t.Fatalf("stats %+v", st)
		}
		after := p.l.Segments()
		first := after[0]
		// Every deleted segment was expired; the first kept one is not (or is
		// the active segment).
		for _, s := range segs[:len(segs)-len(after)] {
			if nowMs()-s.MaxTimestamp <= 3600_000 {
				t.Fatalf("deleted segment %d with max timestamp %d, not expired", s.BaseOffset, s.MaxTimestamp)
			}
		}
		if len(after) > 1 && nowMs()-first.MaxTimestamp > 3600_000 {
			t.Fatalf("expired segment %d kept", first.BaseOffset)
		}
		if p.l.LogStartOffset() != first.BaseOffset {
			t.Fatalf("log start %d, first segment %d", p.l.LogStartOffset(), first.BaseOffset)
		}
		if _, err := p.l.Read(first.BaseOffset-1, 1, -1); !errors.Is(err, local.ErrOffsetOutOfRange) {
			t.Fatalf("read below the log start: %v", err)
		}
		// Later everything expires, but the active segment is never deleted.
		time.Sleep(20 * time.Hour)
		if _, err := r.RunOnce(); err != nil {
			t.Fatal(err)
		}
		if n := sealedCount(p.l); n != 0 {
			t.Fatalf("%d sealed segments left after all expired", n)
		}
		if p.l.LogStartOffset() != p.l.Segments()[0].BaseOffset || p.l.LogEndOffset() != 600 {
			t.Fatalf("start %d end %d", p.l.LogStartOffset(), p.l.LogEndOffset())
		}
	})
}

func TestRetentionBySize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := nowMs()
		p := newPart(t, 1024, map[string]string{"retention.bytes": "4000"})
		fillAged(t, p, 200, t0, 1)
		r := NewRetention(settings(), source(p))
		if _, err := r.RunOnce(); err != nil {
			t.Fatal(err)
		}
		var total int64
		segs := p.l.Segments()
		for _, s := range segs {
			total += s.Size
		}
		// As in Kafka, a segment goes only if the partition stays at or above
		// retention.bytes without it: the partition ends within one segment
		// above the limit.
		if total-segs[0].Size >= 4000 {
			t.Fatalf("partition holds %d bytes, could drop %d more under retention.bytes 4000", total, segs[0].Size)
		}
		if total < 4000 {
			t.Fatalf("deleted too much: %d bytes left", total)
		}
		if p.l.LogStartOffset() != segs[0].BaseOffset {
			t.Fatalf("log start %d, first segment %d", p.l.LogStartOffset(), segs[0].BaseOffset)
		}
	})
}

func TestRetentionUnlimitedAndCompactOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := nowMs()
		unlimited := newPart(t, 1024, map[string]string{"retention.ms": "-1", "retention.bytes": "-1"})
		compact := newPart(t, 1024, map[string]string{"cleanup.policy": "compact", "retention.ms": "1", "retention.bytes": "1"})
		for _, p := range []*part{unlimited, compact} {
			fillAged(t, p, 100, t0-1e9, 1)
		}
		st, err := NewRetention(settings(), source(unlimited, compact)).RunOnce()
		if err != nil {
			t.Fatal(err)
		}
		if st.SegmentsDeleted != 0 || st.Partitions != 1 || unlimited.l.LogStartOffset() != 0 || compact.l.LogStartOffset() != 0 {
			t.Fatalf("stats %+v; starts %d %d", st, unlimited.l.LogStartOffset(), compact.l.LogStartOffset())
		}
	})
}

func TestRetentionOverrideAppliesLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := nowMs()
		p := newPart(t, 1024, map[string]string{"retention.ms": "-1"})
		fillAged(t, p, 200, t0-48*3600_000, 1000)
		r := NewRetention(settings(), source(p))
		if st, _ := r.RunOnce(); st.SegmentsDeleted != 0 {
			t.Fatalf("unlimited retention deleted %d segments", st.SegmentsDeleted)
		}
		// AlterConfigs: retention.ms = 1 day; the next pass applies it.
		p.setConfig(t, map[string]string{"retention.ms": "86400000"})
		if st, _ := r.RunOnce(); st.SegmentsDeleted == 0 || sealedCount(p.l) != 0 {
			t.Fatalf("after the override: %+v, %d sealed left", st, sealedCount(p.l))
		}
		// compact,delete still gets delete retention.
		q := newPart(t, 1024, map[string]string{"cleanup.policy": "compact,delete", "retention.bytes": "2048"})
		fillAged(t, q, 100, t0, 1)
		if st, _ := NewRetention(settings(), source(q)).RunOnce(); st.SegmentsDeleted == 0 {
			t.Fatal("compact,delete topic not trimmed")
		}
	})
}

func TestRetentionAndDeleteRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := nowMs()
		p := newPart(t, 1024, map[string]string{"retention.bytes": "6000"})
		fillAged(t, p, 200, t0, 1)
		segs := p.l.Segments()
		// DeleteRecords into the middle of a later segment: retention must not
		// move the start back, and drops the segments below it.
		cut := segs[len(segs)-2].BaseOffset + 2
		if err := p.l.DeleteRecordsBefore(cut); err != nil {
			t.Fatal(err)
		}
		if _, err := NewRetention(settings(), source(p)).RunOnce(); err != nil {
			t.Fatal(err)
		}
		if p.l.LogStartOffset() != cut {
			t.Fatalf("log start %d, want %d (DeleteRecords)", p.l.LogStartOffset(), cut)
		}
		// Retention after DeleteRecords below the current start changes nothing.
		if err := p.l.DeleteRecordsBefore(1); err != nil || p.l.LogStartOffset() != cut {
			t.Fatalf("delete records below the start: %v, start %d", err, p.l.LogStartOffset())
		}
	})
}

func TestRetentionSkipsClosedLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := nowMs()
		p := newPart(t, 1024, map[string]string{"retention.ms": "1"})
		fillAged(t, p, 50, t0-1e6, 1)
		if err := p.l.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := NewRetention(settings(), source(p)).RunOnce(); err != nil {
			t.Fatalf("closed log: %v", err)
		}
	})
}
