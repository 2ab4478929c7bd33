package compaction

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"testing"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
)

var quiet = slog.New(slog.DiscardHandler)

// part is a test Partition whose configuration can be changed live.
type part struct {
	cfg atomic.Pointer[config.Topic]
	l   *local.Log
}

func (p *part) Config() *config.Topic { return p.cfg.Load() }
func (p *part) Log() *local.Log       { return p.l }

// setConfig applies topic overrides on top of the broker defaults.
func (p *part) setConfig(t *testing.T, overrides map[string]string) {
	t.Helper()
	cfg, err := config.Default().ResolveTopic(overrides)
	if err != nil {
		t.Fatalf("topic config %v: %v", overrides, err)
	}
	p.cfg.Store(&cfg)
}

// newPart opens a log in a temp dir with segment.bytes segBytes and the
// given topic overrides.
func newPart(t *testing.T, segBytes int64, overrides map[string]string) *part {
	t.Helper()
	l, err := local.Open(t.TempDir(), local.Config{SegmentBytes: segBytes, IndexIntervalBytes: 256}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	p := &part{l: l}
	p.setConfig(t, overrides)
	return p
}

// source lists fixed partitions.
func source(ps ...*part) Source {
	return func() []Partition {
		out := make([]Partition, len(ps))
		for i, p := range ps {
			out[i] = p
		}
		return out
	}
}

// settings are test settings with a small dedupe buffer.
func settings() Settings {
	return Settings{CleanerEnable: true, CleanerThreads: 1, DedupeBufferSize: 4 << 20, Logger: quiet}
}

// kv is one record to produce: a nil value is a tombstone.
type kv struct {
	key, value []byte
	ts         int64
}

// appendKV appends recs as one batch with the given codec and returns
// the offset of its first record.
func appendKV(t *testing.T, l *local.Log, codec record.Codec, recs ...kv) int64 {
	t.Helper()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{OffsetDelta: int32(i), TimestampDelta: r.ts - recs[0].ts, Key: r.key, Value: r.value}
	}
	b, err := record.Build(record.BuildOptions{Codec: codec, FirstTimestamp: recs[0].ts}, rs)
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.AppendAsLeader([]record.Batch{b}, local.AppendOptions{LeaderEpoch: 1})
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return res.FirstOffset
}

// stored is one record read back from a log.
type stored struct {
	offset     int64
	ts         int64
	key, value []byte
	batch      record.Batch
}

// readLog reads every record from the log start to the log end, checking
// that offsets strictly increase.
func readLog(t *testing.T, l *local.Log) []stored {
	t.Helper()
	var out []stored
	last := int64(-1)
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		sl, err := l.Read(off, math.MaxInt32, -1)
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		buf := make([]byte, sl.Len)
		_, err = sl.File.ReadAt(buf, sl.Pos)
		sl.Release()
		if err != nil {
			t.Fatalf("read %d: %v", off, err)
		}
		bs, err := record.Split(buf)
		if err != nil || len(bs) == 0 {
			t.Fatalf("split at %d: %d batches, %v", off, len(bs), err)
		}
		for _, b := range bs {
			if err := b.CheckCRC(); err != nil {
				t.Fatalf("batch at %d: %v", b.BaseOffset(), err)
			}
			recs, err := b.Records()
			if err != nil {
				t.Fatalf("records of batch at %d: %v", b.BaseOffset(), err)
			}
			for _, r := range recs {
				o := b.Offset(r)
				if o <= last || o < b.BaseOffset() || o > b.LastOffset() {
					t.Fatalf("record offset %d after %d (batch [%d, %d])", o, last, b.BaseOffset(), b.LastOffset())
				}
				last = o
				if o >= l.LogStartOffset() {
					out = append(out, stored{offset: o, ts: b.Timestamp(r), key: r.Key, value: r.Value, batch: b})
				}
			}
			off = b.LastOffset() + 1
		}
	}
	return out
}

// latest folds records into the key → value state a consumer reading
// them in order ends with (tombstones delete).
func latest(recs []stored) map[string]string {
	m := map[string]string{}
	for _, r := range recs {
		if r.value == nil {
			delete(m, string(r.key))
		} else {
			m[string(r.key)] = string(r.value)
		}
	}
	return m
}

// cleanNow runs a forced pass on p and fails the test on error.
func cleanNow(t *testing.T, c *Cleaner, p *part) Stats {
	t.Helper()
	st, err := c.Clean(context.Background(), p)
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	return st
}

// cleanDirtiest runs one CleanDirtiest and fails the test on error; ok is
// false once no log needs cleaning.
func cleanDirtiest(t *testing.T, c *Cleaner) (st Stats, ok bool) {
	t.Helper()
	st, ok, err := c.CleanDirtiest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st, ok
}

// overwrite appends rounds rounds of one record for each of the keys 0 to
// 9; key k's value in round r is v<k>-<r>.
func overwrite(t *testing.T, p *part, rounds int) {
	t.Helper()
	for round := range rounds {
		for k := range 10 {
			appendKV(t, p.l, record.None, kv{key: key(k), value: fmt.Appendf(nil, "v%d-%d", k, round), ts: nowMs()})
		}
	}
}

func key(i int) []byte { return fmt.Appendf(nil, "key-%04d", i) }
