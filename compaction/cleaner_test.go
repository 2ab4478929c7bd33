package compaction

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
)

// compactCfg is a compacted topic with small segments, so that cleaning
// groups several of them.
func compactCfg(extra ...string) map[string]string {
	m := map[string]string{"cleanup.policy": "compact", "segment.bytes": "4096", "delete.retention.ms": "3600000"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// rollAge is how far roll moves the clock: past segment.ms (the log's
// default of 7 days).
const rollAge = 8 * 24 * time.Hour

// roll seals the active segment: the clock moves on by rollAge and one
// record is appended.
func roll(t *testing.T, p *part) {
	t.Helper()
	time.Sleep(rollAge)
	appendKV(t, p.l, record.None, kv{key: []byte("roll"), value: []byte("r"), ts: nowMs()})
}

func TestCleanKeepsLatestPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPart(t, 1024, compactCfg())
		overwrite(t, p, 20)
		roll(t, p)
		before := readLog(t, p.l)
		c := NewCleaner(settings(), source(p))
		st := cleanNow(t, c, p)
		if st.RecordsRemoved != 190 || st.End != before[len(before)-1].offset || st.Segments == 0 {
			t.Fatalf("stats %+v", st)
		}
		after := readLog(t, p.l)
		if len(after) != 11 {
			t.Fatalf("%d records after cleaning, want 10 keys + roll", len(after))
		}
		for k := range 10 {
			want := fmt.Sprintf("v%d-19", k)
			if string(after[k].value) != want || after[k].offset != int64(190+k) {
				t.Fatalf("key %d: %q at %d, want %q at %d", k, after[k].value, after[k].offset, want, 190+k)
			}
		}
		// The cleaned log ends where the old one did and takes appends.
		if p.l.LogEndOffset() != 201 {
			t.Fatalf("log end %d", p.l.LogEndOffset())
		}
		if p.l.CleanerPoint().FirstDirtyOffset != st.End {
			t.Fatalf("checkpoint %+v, end %d", p.l.CleanerPoint(), st.End)
		}
		// A second pass removes nothing (it may still merge the small cleaned
		// segments, as Kafka does); a third leaves the log alone.
		if st := cleanNow(t, c, p); st.RecordsRemoved != 0 {
			t.Fatalf("second pass %+v", st)
		}
		if st := cleanNow(t, c, p); st.RecordsRemoved != 0 || st.Segments != 0 || st.BytesWritten != 0 {
			t.Fatalf("third pass %+v", st)
		}
	})
}

// model is the property test's record of what was produced.
type model struct {
	keys   [][]byte // key of every offset (nil: nothing written there)
	values [][]byte // value of every offset (nil: a tombstone)
}

func (m *model) add(off int64, k, v []byte) {
	for int64(len(m.keys)) < off {
		m.keys, m.values = append(m.keys, nil), append(m.values, nil)
	}
	m.keys, m.values = append(m.keys, k), append(m.values, v)
}

// state is the key → value map after every offset below end.
func (m *model) state(end int64) map[string]string {
	out := map[string]string{}
	for o := int64(0); o < end && o < int64(len(m.keys)); o++ {
		if m.keys[o] == nil {
			continue
		}
		if m.values[o] == nil {
			delete(out, string(m.keys[o]))
		} else {
			out[string(m.keys[o])] = string(m.values[o])
		}
	}
	return out
}

// lastOffsets maps every key to the offset of its last record below end.
func (m *model) lastOffsets(end int64) map[string]int64 {
	out := map[string]int64{}
	for o := int64(0); o < end && o < int64(len(m.keys)); o++ {
		if m.keys[o] != nil {
			out[string(m.keys[o])] = o
		}
	}
	return out
}

// TestCleanProperty: random keyed updates and tombstones in batches of
// every codec, cleaned now and then while the clock moves; after every
// pass, reading from the start yields exactly the produced state, every
// record sits at its original offset with its original value, the cleaned
// range holds each key's latest record only, and no tombstone outlives
// its delete horizon (delete.retention.ms after the pass that first kept
// it).
func TestCleanProperty(t *testing.T) {
	seeds := uint64(6)
	if raceEnabled {
		seeds = 2
	}
	for seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { cleanProperty(t, seed) })
		})
	}
}

func cleanProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 42))
	const drm = 3600_000
	p := newPart(t, 2048, compactCfg("delete.retention.ms", fmt.Sprint(drm)))
	set := settings()
	set.DedupeBufferSize = 64 << 10 // small: some passes fill the map
	c := NewCleaner(set, source(p))
	m := &model{}
	// Mostly uncompressed, since every check reads the whole log; no zstd,
	// whose pooled encoders and decoders hold channels that must not cross
	// synctest bubbles, and no lz4 under the race detector, where its 4 MiB
	// block buffers make it very slow (TestCleanPreservesCodecsAndTimestamps
	// covers both).
	codecs := []record.Codec{record.None, record.None, record.None, record.Gzip, record.Snappy, record.LZ4}
	if raceEnabled {
		codecs = codecs[:len(codecs)-1]
	}
	nkeys := 20 + rng.IntN(200)
	for round := range 60 {
		for range 1 + rng.IntN(20) {
			n := 1 + rng.IntN(8)
			recs := make([]kv, n)
			for i := range recs {
				k := key(rng.IntN(nkeys))
				var v []byte
				if rng.IntN(6) != 0 {
					v = fmt.Appendf(nil, "value-%d-%d-%s", round, i, bytes.Repeat([]byte("x"), rng.IntN(40)))
				}
				recs[i] = kv{key: k, value: v, ts: nowMs() + int64(i)}
			}
			off := appendKV(t, p.l, codecs[rng.IntN(len(codecs))], recs...)
			for i, r := range recs {
				m.add(off+int64(i), r.key, r.value)
			}
		}
		time.Sleep(time.Duration(rng.IntN(drm/2)) * time.Millisecond)
		if round%5 == 4 {
			if rng.IntN(3) == 0 {
				roll(t, p)
				m.add(p.l.LogEndOffset()-1, []byte("roll"), []byte("r"))
			}
			st := cleanNow(t, c, p)
			checkCleaned(t, p, m, st, nowMs(), drm)
		}
	}
	// Past every horizon, two passes leave no tombstone in the cleaned
	// range: the first drops the expired ones, the second those it stamped.
	roll(t, p)
	m.add(p.l.LogEndOffset()-1, []byte("roll"), []byte("r"))
	for range 3 {
		for {
			st := cleanNow(t, c, p)
			checkCleaned(t, p, m, st, nowMs(), drm)
			if st.End >= p.l.Segments()[len(p.l.Segments())-1].BaseOffset {
				break
			}
		}
		time.Sleep(2 * drm * time.Millisecond)
	}
	end := p.l.CleanerPoint().FirstDirtyOffset
	for _, r := range readLog(t, p.l) {
		if r.offset < end && r.value == nil {
			t.Fatalf("tombstone at %d survived past its horizon", r.offset)
		}
	}
}

// checkCleaned verifies the log after a pass (see TestCleanProperty).
func checkCleaned(t *testing.T, p *part, m *model, st Stats, now, drm int64) {
	t.Helper()
	recs := readLog(t, p.l)
	leo := p.l.LogEndOffset()
	got, want := latest(recs), m.state(leo)
	if len(got) != len(want) {
		t.Fatalf("after pass %+v: %d live keys, want %d", st, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %s: %q, want %q", k, got[k], v)
		}
	}
	if e := emptyBatches(t, p.l); len(e) != 0 {
		t.Fatalf("after pass %+v: %d empty batches, first at %d", st, len(e), e[0].BaseOffset())
	}
	lastBelowEnd := m.lastOffsets(st.End)
	for _, r := range recs {
		if !bytes.Equal(r.key, m.keys[r.offset]) || !bytes.Equal(r.value, m.values[r.offset]) || (r.value == nil) != (m.values[r.offset] == nil) {
			t.Fatalf("record at %d is %q=%q, was written as %q=%q", r.offset, r.key, r.value, m.keys[r.offset], m.values[r.offset])
		}
		if r.offset >= st.End {
			continue
		}
		if last := lastBelowEnd[string(r.key)]; last != r.offset {
			t.Fatalf("record of %s at %d in the cleaned range, but the key's latest is at %d", r.key, r.offset, last)
		}
		if r.value == nil {
			h := r.batch.FirstTimestamp()
			if !r.batch.HasDeleteHorizon() || h <= now || h > now+drm {
				t.Fatalf("tombstone at %d: horizon set %v at %d, now %d", r.offset, r.batch.HasDeleteHorizon(), h, now)
			}
		}
	}
}

// TestCleanPreservesCodecsAndTimestamps runs on the real clock, outside a
// synctest bubble: the codecs' pooled zstd encoders and decoders hold
// channels, which must not cross bubbles.
func TestCleanPreservesCodecsAndTimestamps(t *testing.T) {
	t0 := nowMs() - 60_000 // every timestamp below is in the past: cleanable
	const segBytes = 1 << 20
	p := newPart(t, segBytes, compactCfg())
	codecs := []record.Codec{record.None, record.Gzip, record.Snappy, record.LZ4, record.Zstd}
	for i, codec := range codecs {
		// Each batch: an update of a shared key (superseded later), and a
		// key of its own that stays.
		appendKV(t, p.l, codec,
			kv{key: []byte("shared"), value: []byte(codec.String()), ts: t0 + int64(i)*100},
			kv{key: fmt.Appendf(nil, "own-%d", i), value: []byte("keep"), ts: t0 + int64(i)*100 + 7})
	}
	// A LogAppendTime batch: record timestamps are the batch's max timestamp.
	b := record.NewBatch(record.BuildOptions{FirstTimestamp: 5},
		record.Record{Key: []byte("shared"), Value: []byte("lat")}, record.Record{OffsetDelta: 1, Key: []byte("lat-own"), Value: []byte("keep")})
	if _, err := p.l.AppendAsLeader([]record.Batch{b}, local.AppendOptions{LogAppendTime: true, Now: t0 + 9999}); err != nil {
		t.Fatal(err)
	}
	appendKV(t, p.l, record.None, kv{key: []byte("shared"), value: []byte("final"), ts: t0 + 20000})
	// Seal the segment by size: a record as large as a segment.
	appendKV(t, p.l, record.None, kv{key: []byte("roll"), value: make([]byte, segBytes), ts: t0 + 20000})
	before := readLog(t, p.l)
	cleanNow(t, NewCleaner(settings(), source(p)), p)
	after := readLog(t, p.l)
	if len(after) != len(before)-len(codecs)-1 {
		t.Fatalf("%d records after, %d before", len(after), len(before))
	}
	byOffset := map[int64]stored{}
	for _, r := range before {
		byOffset[r.offset] = r
	}
	for _, r := range after {
		old := byOffset[r.offset]
		if r.ts != old.ts || r.batch.Codec() != old.batch.Codec() || r.batch.LogAppendTime() != old.batch.LogAppendTime() ||
			r.batch.BaseOffset() != old.batch.BaseOffset() || r.batch.LastOffset() != old.batch.LastOffset() ||
			r.batch.PartitionLeaderEpoch() != old.batch.PartitionLeaderEpoch() {
			t.Fatalf("record at %d: ts %d codec %s batch [%d,%d] epoch %d; was ts %d codec %s batch [%d,%d] epoch %d",
				r.offset, r.ts, r.batch.Codec(), r.batch.BaseOffset(), r.batch.LastOffset(), r.batch.PartitionLeaderEpoch(),
				old.ts, old.batch.Codec(), old.batch.BaseOffset(), old.batch.LastOffset(), old.batch.PartitionLeaderEpoch())
		}
	}
}

func TestTombstoneDeleteHorizon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := nowMs()
		p := newPart(t, 1024, compactCfg("delete.retention.ms", "60000"))
		appendKV(t, p.l, record.None, kv{key: []byte("a"), value: []byte("1"), ts: nowMs()}, kv{key: []byte("b"), value: []byte("1"), ts: nowMs()})
		appendKV(t, p.l, record.None, kv{key: []byte("a"), ts: nowMs()})
		roll(t, p)
		c := NewCleaner(settings(), source(p))
		cleanNow(t, c, p)
		recs := readLog(t, p.l)
		if len(recs) != 3 || recs[1].value != nil || !recs[1].batch.HasDeleteHorizon() || recs[1].batch.FirstTimestamp() != nowMs()+60000 {
			t.Fatalf("first pass: %d records, tombstone horizon %v", len(recs), recs[1].batch.HasDeleteHorizon())
		}
		if recs[1].ts != t0 {
			t.Fatalf("tombstone timestamp %d changed by the horizon (want %d)", recs[1].ts, t0)
		}
		if h := p.l.CleanerPoint().DeleteHorizonMs; h != nowMs()+60000 {
			t.Fatalf("checkpointed horizon %d", h)
		}
		// Before the horizon the log is not due; after it, it is, and the
		// tombstone goes.
		time.Sleep(59 * time.Second)
		if _, ok, _ := c.CleanDirtiest(context.Background()); ok {
			t.Fatal("cleaned before the horizon")
		}
		cleanNow(t, c, p)
		if recs := readLog(t, p.l); len(recs) != 3 {
			t.Fatalf("tombstone dropped before its horizon: %d records", len(recs))
		}
		time.Sleep(2 * time.Second)
		st, ok, err := c.CleanDirtiest(context.Background())
		if err != nil || !ok || st.TombstonesRemoved != 1 {
			t.Fatalf("after the horizon: ok %v err %v stats %+v", ok, err, st)
		}
		recs = readLog(t, p.l)
		if len(recs) != 2 || string(recs[0].key) != "b" {
			t.Fatalf("after the horizon: %d records", len(recs))
		}
		if h := p.l.CleanerPoint().DeleteHorizonMs; h != math.MaxInt64 {
			t.Fatalf("horizon still pending: %d", h)
		}
	})
}

func TestCompactionLags(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPart(t, 1024, compactCfg("min.compaction.lag.ms", "3600000", "min.cleanable.dirty.ratio", "0.5"))
		for round := range 5 {
			for k := range 10 {
				appendKV(t, p.l, record.None, kv{key: key(k), value: fmt.Appendf(nil, "%d", round), ts: nowMs()})
			}
		}
		time.Sleep(time.Minute)
		roll(t, p) // the clock moved 8 days: everything before is old enough
		// The young records are stamped a minute before the cleaning below,
		// which comes after the roll that seals them moved the clock on.
		young := nowMs() + (rollAge - time.Minute).Milliseconds()
		for k := range 10 {
			appendKV(t, p.l, record.None, kv{key: key(k), value: []byte("young"), ts: young})
		}
		roll(t, p)
		c := NewCleaner(settings(), source(p))
		st, ok, err := c.CleanDirtiest(context.Background())
		if err != nil || !ok {
			t.Fatalf("ok %v err %v", ok, err)
		}
		for _, r := range readLog(t, p.l) {
			if r.offset < st.End && r.ts >= young {
				t.Fatalf("record at %d younger than min.compaction.lag.ms was cleaned (end %d)", r.offset, st.End)
			}
		}
		if st.End > 51 {
			t.Fatalf("dirty range ended at %d, inside the young segment", st.End)
		}

		// max.compaction.lag.ms: a barely dirty log is cleaned once its first
		// dirty record is too old.
		q := newPart(t, 1024, compactCfg("min.cleanable.dirty.ratio", "0.99", "max.compaction.lag.ms", "600000"))
		for k := range 40 {
			appendKV(t, q.l, record.None, kv{key: key(k), value: []byte("v"), ts: nowMs()})
		}
		// The record that rolls them is the first dirty one after the pass
		// below; it is stamped five minutes before the first try, which
		// comes after the next roll moved the clock on.
		time.Sleep(rollAge)
		appendKV(t, q.l, record.None, kv{key: []byte("roll"), value: []byte("r"), ts: nowMs() + (rollAge - 5*time.Minute).Milliseconds()})
		c = NewCleaner(settings(), source(q))
		cleanNow(t, c, q)
		appendKV(t, q.l, record.None, kv{key: key(0), value: []byte("w"), ts: nowMs()})
		roll(t, q)
		if _, ok, _ := c.CleanDirtiest(context.Background()); ok {
			t.Fatal("cleaned below the dirty ratio before max.compaction.lag.ms")
		}
		time.Sleep(10 * time.Minute)
		if _, ok, err := c.CleanDirtiest(context.Background()); !ok || err != nil {
			t.Fatalf("overdue log not cleaned: %v", err)
		}
	})
}

func TestCleanDirtiestPicksDirtiest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newPart(t, 1024, compactCfg("min.cleanable.dirty.ratio", "0.1"))
		b := newPart(t, 1024, compactCfg("min.cleanable.dirty.ratio", "0.1"))
		plain := newPart(t, 1024, map[string]string{})
		for _, p := range []*part{a, b, plain} {
			for i := range 60 {
				appendKV(t, p.l, record.None, kv{key: key(i % 10), value: []byte("v"), ts: nowMs()})
			}
			roll(t, p)
		}
		c := NewCleaner(settings(), source(a, b, plain))
		cleanNow(t, c, a)
		for i := range 60 {
			appendKV(t, a.l, record.None, kv{key: key(i % 10), value: []byte("w"), ts: nowMs()})
		}
		roll(t, a)
		// a is partly clean, b wholly dirty: b goes first, then a; plain never.
		var order []string
		for {
			st, ok := cleanDirtiest(t, c)
			if !ok {
				break
			}
			order = append(order, st.Partition)
			if len(order) > 5 {
				t.Fatalf("still cleaning after %v", order)
			}
		}
		if want := []string{name(b), name(a)}; !slices.Equal(order, want) {
			t.Fatalf("cleaning order %v, want %v", order, want)
		}
	})
}

func TestSmallDedupeBufferTakesSeveralPasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPart(t, 4096, compactCfg("min.cleanable.dirty.ratio", "0.01"))
		m := &model{}
		for round := range 3 {
			for k := range 1000 {
				v := fmt.Appendf(nil, "v%d", round)
				off := appendKV(t, p.l, record.None, kv{key: key(k), value: v, ts: nowMs()})
				m.add(off, key(k), v)
			}
		}
		roll(t, p)
		m.add(p.l.LogEndOffset()-1, []byte("roll"), []byte("r"))
		set := settings()
		set.DedupeBufferSize = 16 << 10 // about 500 keys
		c := NewCleaner(set, source(p))
		if c.MapCapacity() >= 1000 {
			t.Fatalf("map holds %d keys", c.MapCapacity())
		}
		passes := 0
		for {
			st, ok := cleanDirtiest(t, c)
			if !ok {
				break
			}
			passes++
			checkCleaned(t, p, m, st, nowMs(), 3600_000)
			if passes > 20 {
				t.Fatal("too many passes")
			}
		}
		if passes < 3 {
			t.Fatalf("%d passes with a map of %d keys", passes, c.MapCapacity())
		}
		if n := len(readLog(t, p.l)); n > 1001+c.MapCapacity() {
			t.Fatalf("%d records left", n)
		}
	})
}

func TestIdempotentProducerLastBatchKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := nowMs()
		p := newPart(t, 2048, compactCfg())
		for seq := range int32(3) {
			b := record.NewBatch(record.BuildOptions{FirstTimestamp: t0, Idempotent: true, ProducerID: 5, BaseSequence: seq},
				record.Record{Key: []byte("k"), Value: fmt.Appendf(nil, "%d", seq)})
			if _, err := p.l.AppendAsLeader([]record.Batch{b}, local.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		appendKV(t, p.l, record.None, kv{key: []byte("k"), value: []byte("plain"), ts: t0})
		// Roll by size, not by time: an idle producer would expire.
		for i := 0; len(p.l.Segments()) < 2; i++ {
			appendKV(t, p.l, record.None, kv{key: fmt.Appendf(nil, "filler-%d", i), value: make([]byte, 100), ts: t0})
		}
		cleanNow(t, NewCleaner(settings(), source(p)), p)
		var batches []record.Batch
		for off := int64(0); off < p.l.LogEndOffset(); {
			sl, err := p.l.Read(off, 1, -1)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, sl.Len)
			_, _ = sl.File.ReadAt(buf, sl.Pos)
			sl.Release()
			b := record.Batch(buf)
			batches = append(batches, b)
			off = b.LastOffset() + 1
		}
		// Producer 5's newest batch (offset 2) stays, emptied; its older ones go.
		if len(batches) < 3 || batches[0].BaseOffset() != 2 || batches[0].NumRecords() != 0 || batches[0].ProducerID() != 5 || batches[0].BaseSequence() != 2 {
			t.Fatalf("%d batches; first at %d with %d records, producer %d seq %d",
				len(batches), batches[0].BaseOffset(), batches[0].NumRecords(), batches[0].ProducerID(), batches[0].BaseSequence())
		}
		// It is the only empty batch left.
		if e := emptyBatches(t, p.l); len(e) != 1 {
			t.Fatalf("%d empty batches", len(e))
		}
	})
}

// TestCleanRefusesBatchOverMaxMessageBytes: a gzip batch in the log that
// decompresses beyond the topic's max.message.bytes (written before the
// limit was lowered) fails the pass, as produce would refuse it, instead
// of being inflated whole. Real clock: see TestCleanPreservesCodecsAndTimestamps.
func TestCleanRefusesBatchOverMaxMessageBytes(t *testing.T) {
	t0 := nowMs() - 60_000
	const segBytes = 64 << 10
	p := newPart(t, segBytes, compactCfg("segment.bytes", fmt.Sprint(segBytes)))
	// 2 MiB of zeros: past InflateFactor times the 64 KiB limit set below.
	appendKV(t, p.l, record.Gzip, kv{key: []byte("big"), value: make([]byte, 2<<20), ts: t0})
	appendKV(t, p.l, record.None, kv{key: []byte("big"), value: []byte("small"), ts: t0 + 1})
	appendKV(t, p.l, record.None, kv{key: []byte("roll"), value: make([]byte, segBytes), ts: t0 + 2})
	p.setConfig(t, compactCfg("segment.bytes", fmt.Sprint(segBytes), "max.message.bytes", "65536"))
	c := NewCleaner(settings(), source(p))
	if _, err := c.Clean(context.Background(), p); !errors.Is(err, record.ErrTooLarge) {
		t.Fatalf("clean with a batch inflating past max.message.bytes: %v, want ErrTooLarge", err)
	}
	// Under a limit it fits, the same log cleans (a new cleaner: the
	// first marked the log uncleanable).
	p.setConfig(t, compactCfg("segment.bytes", fmt.Sprint(segBytes), "max.message.bytes", fmt.Sprint(1<<20)))
	if st := cleanNow(t, NewCleaner(settings(), source(p)), p); st.RecordsRemoved != 1 {
		t.Fatalf("stats %+v, want the big record removed", st)
	}
}
