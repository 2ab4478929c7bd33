package compaction

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/tier/local"
	"github.com/strata-broker/strata/tier/record"
)

// scan reads the records of l from its start until it has caught up with
// the log end, a few batches at a time (so that a cleaning pass can swap
// segments between two reads), and folds them into the state a consumer
// ends with; it returns that state and the offset it stopped at. Like a
// consumer, it must follow the log to its end: a record may be cleaned
// away because a later one of its key was appended after the scan began.
func scan(l *local.Log) (map[string]string, int64, error) {
	state := map[string]string{}
	last := int64(-1)
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		sl, err := l.Read(off, 512, -1)
		if err != nil {
			return nil, 0, fmt.Errorf("read %d: %w", off, err)
		}
		buf := make([]byte, sl.Len)
		_, err = sl.File.ReadAt(buf, sl.Pos)
		sl.Release()
		if err != nil {
			return nil, 0, err
		}
		bs, err := record.Split(buf)
		if err != nil || len(bs) == 0 {
			return nil, 0, fmt.Errorf("split at %d: %d batches, %v", off, len(bs), err)
		}
		for _, b := range bs {
			recs, err := b.Records()
			if err != nil {
				return nil, 0, err
			}
			for _, r := range recs {
				if o := b.Offset(r); o <= last {
					return nil, 0, fmt.Errorf("offset %d after %d", o, last)
				} else if o >= off {
					last = o
					if r.Value == nil {
						delete(state, string(r.Key))
					} else {
						state[string(r.Key)] = string(r.Value)
					}
				}
			}
			off = b.LastOffset() + 1
		}
	}
	return state, off, nil
}

// TestReadersDuringCleaning: consumers reading from the start to the end
// while the log is appended to and cleaned again and again always end with
// the latest value of every key as of where they stopped.
func TestReadersDuringCleaning(t *testing.T) {
	p := newPart(t, 1024, compactCfg("delete.retention.ms", "86400000"))
	c := NewCleaner(settings(), source(p))
	var mu sync.Mutex // guards m
	m := &model{}
	write := func(round int) {
		for k := range 30 {
			var v []byte
			if (k+round)%7 != 0 {
				v = fmt.Appendf(nil, "v%d-%d", k, round)
			}
			mu.Lock()
			m.add(p.l.LogEndOffset(), key(k), v)
			mu.Unlock()
			appendKV(t, p.l, record.None, kv{key: key(k), value: v, ts: nowMs()})
		}
	}
	write(0)
	stop := make(chan struct{})
	errs := make(chan error, 2)
	var scans atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					errs <- nil
					return
				default:
				}
				got, end, err := scan(p.l)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				want := m.state(end)
				mu.Unlock()
				if len(got) != len(want) {
					errs <- fmt.Errorf("scan to %d: %d keys, want %d", end, len(got), len(want))
					return
				}
				for k, v := range want {
					if got[k] != v {
						errs <- fmt.Errorf("scan to %d: key %s = %q, want %q", end, k, got[k], v)
						return
					}
				}
				scans.Add(1)
			}
		})
	}
	passes := 0
	for round := 1; round <= 30; round++ {
		write(round)
		if round%3 == 0 {
			st := cleanNow(t, c, p)
			passes += st.Segments
		}
	}
	// Keep cleaning until the readers have scanned enough.
	deadline := time.Now().Add(20 * time.Second)
	for scans.Load() < 20 && time.Now().Before(deadline) {
		write(99)
		cleanNow(t, c, p)
	}
	close(stop)
	wg.Wait()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if passes == 0 || scans.Load() < 20 {
		t.Fatalf("%d segments replaced, %d scans", passes, scans.Load())
	}
}

func TestOffsetMap(t *testing.T) {
	m := newOffsetMap(slotSize * 100)
	if m.capacity() != 75 {
		t.Fatalf("capacity %d", m.capacity())
	}
	m.reset(0)
	for i := range 75 {
		if !m.put(m.hash(key(i)), int64(i)) {
			t.Fatalf("put %d refused", i)
		}
	}
	if m.put(m.hash(key(1000)), 1) || !m.put(m.hash(key(3)), 300) || m.room(1) {
		t.Fatal("a full map took a new key, refused an update, or claims room")
	}
	if off, ok := m.get(m.hash(key(3))); !ok || off != 300 {
		t.Fatalf("get: %d %v", off, ok)
	}
	if _, ok := m.get(m.hash(key(1000))); ok {
		t.Fatal("absent key found")
	}
	m.reset(0)
	if _, ok := m.get(m.hash(key(3))); ok || m.used != 0 {
		t.Fatal("reset kept a key")
	}
	// A big buffer starts small and grows with the keys.
	big := newOffsetMap(1 << 30)
	big.reset(0)
	if len(big.slots) != initialSlots {
		t.Fatalf("table of %d slots at the start", len(big.slots))
	}
	for i := range 100_000 {
		big.put(big.hash(key(i)), int64(i))
	}
	for i := range 100_000 {
		if off, ok := big.get(big.hash(key(i))); !ok || off != int64(i) {
			t.Fatalf("after growing: key %d at %d, %v", i, off, ok)
		}
	}
	if len(big.slots) > 1<<18 {
		t.Fatalf("table of %d slots for 100k keys", len(big.slots))
	}
}

func TestThrottler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := newThrottler(1000) // bytes per second
		start := time.Now()
		for range 30 {
			if err := th.add(context.Background(), 100); err != nil {
				t.Fatal(err)
			}
		}
		// 3000 bytes at 1000 B/s take about 3 s.
		if took := time.Since(start); took < 2500*time.Millisecond || took > 3500*time.Millisecond {
			t.Fatalf("took %v for 3000 bytes at 1000 B/s", took)
		}
		if !newThrottler(1.7976931348623157e308).unlimited() {
			t.Fatal("the default rate throttles")
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		th = newThrottler(1)
		if err := th.add(ctx, 10); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled wait: %v", err)
		}
	})
}

// TestServiceRuns runs the background service with short intervals: a
// retention pass trims a delete topic and a cleaner thread cleans a
// compacted one; cancelling stops both.
func TestServiceRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := nowMs()
		del := newPart(t, 1024, map[string]string{"retention.ms": "1000"})
		fillAged(t, del, 100, t0-1e6, 1)
		cmp := newPart(t, 1024, compactCfg("min.cleanable.dirty.ratio", "0.1"))
		for i := range 100 {
			appendKV(t, cmp.l, record.None, kv{key: key(i % 5), value: []byte("v"), ts: nowMs()})
		}
		roll(t, cmp)
		set := settings()
		set.RetentionCheckInterval, set.CleanerBackoff = 10*time.Millisecond, 10*time.Millisecond
		set.CleanerThreads = 2
		svc := NewService(set, source(del, cmp))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { svc.Run(ctx); close(done) }()
		deadline := time.Now().Add(20 * time.Second)
		for (del.l.LogStartOffset() == 0 || cmp.l.CleanerPoint().FirstDirtyOffset == 0) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("service did not stop")
		}
		if del.l.LogStartOffset() == 0 {
			t.Fatal("retention never ran")
		}
		if got := len(readLog(t, cmp.l)); got != 6 {
			t.Fatalf("compacted log holds %d records, want 6", got)
		}
	})
}

// hwPart is a partition whose high watermark lags its log end.
type hwPart struct {
	*part
	hw int64
}

func (p *hwPart) HighWatermark() int64 { return p.hw }

func TestHighWatermarkBoundsRetentionAndCleaning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := nowMs()
		p := newPart(t, 1024, compactCfg("cleanup.policy", "compact,delete", "retention.ms", "1"))
		for i := range 100 {
			appendKV(t, p.l, record.None, kv{key: key(i % 5), value: []byte("v"), ts: t0 - 1e6})
		}
		segs := p.l.Segments()
		hw := &hwPart{part: p, hw: segs[2].BaseOffset + 1}
		src := func() []Partition { return []Partition{hw} }
		// Every sealed segment expired, but only those wholly below the high
		// watermark go.
		if _, err := NewRetention(settings(), src).RunOnce(); err != nil {
			t.Fatal(err)
		}
		if start := p.l.LogStartOffset(); start != segs[2].BaseOffset {
			t.Fatalf("log start %d, want %d (high watermark %d)", start, segs[2].BaseOffset, hw.hw)
		}
		st, err := NewCleaner(settings(), src).Clean(context.Background(), hw)
		if err != nil {
			t.Fatal(err)
		}
		if st.End > hw.hw || st.End <= segs[2].BaseOffset {
			t.Fatalf("cleaned up to %d, high watermark %d", st.End, hw.hw)
		}
		// Keys cycle through 5 values: below the cleaned end only each key's
		// latest (the last 5 offsets) may remain; above it, everything.
		for _, r := range readLog(t, p.l) {
			if r.offset < st.End-5 {
				t.Fatalf("superseded record at %d kept below the cleaned end %d", r.offset, st.End)
			}
		}
		if n := len(readLog(t, p.l)); int64(n) < p.l.LogEndOffset()-st.End {
			t.Fatalf("%d records left, records above the cleaned end %d were removed", n, st.End)
		}
	})
}
