package local

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-broker/strata/tier/record"
)

func TestAppendReadManySegments(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{SegmentBytes: 16384, IndexIntervalBytes: 512}
	l := openLog(t, dir, cfg)
	batches := appendN(t, l, 1000, 1000)
	next := int64(0)
	for i, b := range batches {
		if b.BaseOffset() != next || b.PartitionLeaderEpoch() != 3 {
			t.Fatalf("batch %d at %d (want %d), epoch %d", i, b.BaseOffset(), next, b.PartitionLeaderEpoch())
		}
		next = b.LastOffset() + 1
	}
	if l.LogEndOffset() != next {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), next)
	}
	segs := l.Segments()
	if len(segs) < 4 {
		t.Fatalf("only %d segments", len(segs))
	}
	for i, s := range segs {
		if s.Size > cfg.SegmentBytes || s.Sealed != (i < len(segs)-1) {
			t.Fatalf("segment %d: %+v", i, s)
		}
		if i > 0 && s.BaseOffset != segs[i-1].NextOffset {
			t.Fatalf("segment %d starts at %d after %d", i, s.BaseOffset, segs[i-1].NextOffset)
		}
	}
	checkReads(t, l, batches, 0)

	// A large read stops at whole batches within maxBytes.
	sl, err := l.Read(0, 3000, -1)
	if err != nil {
		t.Fatal(err)
	}
	if sl.Len > 3000 || len(readSlice(t, sl)) < 2 {
		t.Fatalf("large read: %d bytes", sl.Len)
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	re := openLog(t, dir, cfg)
	if re.LogEndOffset() != next || len(re.Segments()) != len(segs) {
		t.Fatalf("reopened: LEO %d, %d segments", re.LogEndOffset(), len(re.Segments()))
	}
	checkReads(t, re, batches, 0)
	more := appendN(t, re, 5, 9000)
	if more[0].BaseOffset() != next {
		t.Fatalf("append after reopen at %d", more[0].BaseOffset())
	}
}

func TestRollBySegmentMs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := openLog(t, t.TempDir(), Config{SegmentMs: 100})
		appendN(t, l, 1, 0)
		time.Sleep(60 * time.Millisecond)
		appendN(t, l, 1, 0)
		if n := len(l.Segments()); n != 1 {
			t.Fatalf("rolled too early: %d segments", n)
		}
		time.Sleep(50 * time.Millisecond) // 110 ms after the first append
		appendN(t, l, 1, 0)
		if n := len(l.Segments()); n != 2 {
			t.Fatalf("did not roll by time: %d segments", n)
		}
		// The new segment's clock starts at its own first append.
		time.Sleep(90 * time.Millisecond)
		appendN(t, l, 1, 0)
		if n := len(l.Segments()); n != 2 {
			t.Fatalf("rolled again too early: %d segments", n)
		}
		// An idle log does not roll an empty segment.
		l.SetConfig(Config{SegmentMs: 100, SegmentBytes: 1 << 20})
		time.Sleep(time.Hour)
		appendN(t, l, 1, 0)
		if segs := l.Segments(); len(segs) != 3 || segs[2].Size == 0 {
			t.Fatalf("segments after idle: %+v", segs)
		}
	})
}

func TestReadBounds(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{SegmentBytes: 4096})
	batches := appendN(t, l, 60, 0)
	leo := l.LogEndOffset()

	// maxBytes smaller than a batch: one whole batch.
	sl, err := l.Read(0, 1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got := readSlice(t, sl); len(got) != 1 || len(got[0]) != len(batches[0]) {
		t.Fatalf("tiny read returned %d batches", len(got))
	}
	// Never past maxOffset (the high watermark).
	hw := batches[30].BaseOffset()
	for off := int64(0); off < hw; off += 7 {
		sl, err := l.Read(off, 1<<20, hw)
		if err != nil {
			t.Fatal(err)
		}
		got := readSlice(t, sl)
		if len(got) == 0 || got[len(got)-1].LastOffset() >= hw {
			t.Fatalf("read %d with hw %d returned up to %d", off, hw, got[len(got)-1].LastOffset())
		}
	}
	if sl, err := l.Read(hw, 1<<20, hw); err != nil || sl.Len != 0 {
		t.Fatalf("read at hw: %+v %v", sl, err)
	}
	if sl, err := l.Read(leo, 1<<20, -1); err != nil || sl.Len != 0 {
		t.Fatalf("read at LEO: %+v %v", sl, err)
	}
	if _, err := l.Read(leo+1, 1, -1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read past LEO: %v", err)
	}
	if _, err := l.Read(-1, 1, -1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below start: %v", err)
	}
}

func TestTimestampLookups(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{SegmentBytes: 2048, IndexIntervalBytes: 128})
	var batches []record.Batch
	for i := range 80 {
		ts := int64(100_000 + i*50)
		if i%9 == 4 {
			ts -= 400 // some producers' clocks lag
		}
		b := plain(3, ts)
		if _, err := l.AppendAsLeader([]record.Batch{b}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, b)
	}
	if len(l.Segments()) < 3 {
		t.Fatalf("want several segments, got %d", len(l.Segments()))
	}
	want := func(ts int64) (int64, int64, bool) {
		for _, b := range batches {
			recs, _ := b.Records()
			for _, r := range recs {
				if b.Timestamp(r) >= ts {
					return b.Offset(r), b.Timestamp(r), true
				}
			}
		}
		return 0, 0, false
	}
	for ts := int64(99_000); ts < 104_200; ts += 33 {
		wo, wts, wok := want(ts)
		off, rts, ok := l.OffsetForTimestamp(ts)
		if off != wo || rts != wts || ok != wok {
			t.Fatalf("OffsetForTimestamp(%d) = %d, %d, %v; want %d, %d, %v", ts, off, rts, ok, wo, wts, wok)
		}
	}
	maxTs, maxOff := l.MaxTimestamp()
	last := batches[len(batches)-1]
	if maxTs != last.MaxTimestamp() || maxOff != last.LastOffset() {
		t.Fatalf("MaxTimestamp = %d at %d; want %d at %d", maxTs, maxOff, last.MaxTimestamp(), last.LastOffset())
	}
}

func TestLogAppendTime(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{})
	b := plain(3, 10)
	res, err := l.AppendAsLeader([]record.Batch{b}, AppendOptions{LeaderEpoch: 9, LogAppendTime: true, Now: 777_000})
	if err != nil {
		t.Fatal(err)
	}
	if res.LogAppendTime != 777_000 || res.FirstOffset != 0 || res.LastOffset != 2 {
		t.Fatalf("result %+v", res)
	}
	sl, err := l.Read(0, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	got := readSlice(t, sl)[0]
	if !got.LogAppendTime() || got.MaxTimestamp() != 777_000 || got.PartitionLeaderEpoch() != 9 || got.CheckCRC() != nil {
		t.Fatalf("stored batch: lat %v ts %d epoch %d crc %v", got.LogAppendTime(), got.MaxTimestamp(), got.PartitionLeaderEpoch(), got.CheckCRC())
	}
	res, err = l.AppendAsLeader([]record.Batch{plain(1, 10)}, AppendOptions{})
	if err != nil || res.LogAppendTime != -1 || res.FirstOffset != 3 {
		t.Fatalf("create-time append: %+v %v", res, err)
	}
}

func TestFlushPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		// Defaults: nothing is flushed on append.
		l := openLog(t, dir, Config{})
		appendN(t, l, 10, 0)
		if rp := l.RecoveryPoint(); rp != 0 {
			t.Fatalf("default config flushed: recovery point %d", rp)
		}
		// By message count.
		l.SetConfig(Config{FlushIntervalMessages: 50})
		for l.RecoveryPoint() == 0 {
			appendN(t, l, 1, 0)
			if l.LogEndOffset() > 60 {
				t.Fatal("no flush after 50 messages")
			}
		}
		if rp := l.RecoveryPoint(); rp != l.LogEndOffset() || rp < 50 {
			t.Fatalf("recovery point %d, LEO %d", rp, l.LogEndOffset())
		}
		// By time.
		l.SetConfig(Config{FlushIntervalMs: 1000})
		appendN(t, l, 1, 0)
		if l.RecoveryPoint() == l.LogEndOffset() {
			t.Fatal("flushed before the interval")
		}
		time.Sleep(1001 * time.Millisecond)
		appendN(t, l, 1, 0)
		if l.RecoveryPoint() != l.LogEndOffset() {
			t.Fatal("no flush after the interval")
		}
		// The checkpoint on disk follows.
		if _, rp, ok := readCheckpoint(dir); !ok || rp != l.LogEndOffset() {
			t.Fatalf("checkpoint recovery point %d ok %v", rp, ok)
		}
	})
}

func TestRollFlusherAdvancesRecoveryPoint(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{SegmentBytes: 2048})
	appendN(t, l, 100, 0)
	segs := l.Segments()
	target := segs[len(segs)-1].BaseOffset
	deadline := time.Now().Add(10 * time.Second)
	for l.RecoveryPoint() < target {
		if time.Now().After(deadline) {
			t.Fatalf("recovery point %d never reached %d", l.RecoveryPoint(), target)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFollowerAppend(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{SegmentBytes: 1024})
	batches := followerBatches(30, 10) // a gap before index 10
	next := batches[29].LastOffset() + 1
	if err := l.AppendAsFollower(batches); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != next {
		t.Fatalf("LEO %d, want %d", l.LogEndOffset(), next)
	}
	checkReads(t, l, batches, 0)
	// A read inside the gap returns the next batch.
	sl, err := l.Read(batches[9].LastOffset()+2, 1, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got := readSlice(t, sl); len(got) != 1 || got[0].BaseOffset() != batches[10].BaseOffset() {
		t.Fatalf("read in gap: %v", got)
	}
	stale := plain(1, 0)
	stale.SetBaseOffset(next - 1)
	if err := l.AppendAsFollower([]record.Batch{stale}); !errors.Is(err, ErrUnexpectedOffset) {
		t.Fatalf("stale follower batch: %v", err)
	}
}

// TestOnOlderSegment: a read stops at its segment's end, so whether the
// segment it starts in is older than the end offset's decides whether a
// fetch may wait; a segment without a batch at or after the offset (a
// gap at its end) is passed over, as Read does.
func TestOnOlderSegment(t *testing.T) {
	// One batch per segment, with gaps (as after compaction on the
	// leader) before the batches at index 10 and 29, the last.
	l := openLog(t, t.TempDir(), Config{SegmentBytes: int64(len(plain(2, 100))) * 3 / 2})
	batches := followerBatches(30, 10, 29)
	if err := l.AppendAsFollower(batches); err != nil {
		t.Fatal(err)
	}
	if n := len(l.Segments()); n != 30 {
		t.Fatalf("%d segments, want one per batch", n)
	}
	leo, last := l.LogEndOffset(), batches[29]
	for _, c := range []struct {
		name        string
		offset, end int64
		want        bool
	}{
		{"first segment", 0, leo, true},
		{"last offset before the active segment", batches[28].LastOffset(), leo, true},
		{"start of the active segment", last.BaseOffset(), leo, false},
		{"inside the active segment", leo - 1, leo, false},
		{"end in the same segment", 0, 1, false},
		{"end at the next segment's base", 0, batches[1].BaseOffset(), true},
		{"in a gap before an older segment", batches[9].LastOffset() + 1, leo, true},
		{"in a gap before the end's segment", batches[9].LastOffset() + 1, batches[10].BaseOffset(), false},
		{"in the gap before the active segment", batches[28].LastOffset() + 1, leo, false},
		{"at the end", leo, leo, false},
		{"past the end", leo, leo - 1, false},
	} {
		if got := l.OnOlderSegment(c.offset, c.end); got != c.want {
			t.Errorf("%s: OnOlderSegment(%d, %d) = %v, want %v", c.name, c.offset, c.end, got, c.want)
		}
	}
}

func TestValidationIsAllOrNothing(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{})
	appendN(t, l, 3, 0)
	leo := l.LogEndOffset()
	bad := plain(2, 0)
	bad[len(bad)-1] ^= 1 // CRC mismatch
	if _, err := l.AppendAsLeader([]record.Batch{plain(1, 0), bad}, AppendOptions{}); !errors.Is(err, record.ErrCorrupt) {
		t.Fatalf("corrupt batch: %v", err)
	}
	if _, err := l.AppendAsLeader([]record.Batch{plain(1, 0), plain(1, 0)[:30]}, AppendOptions{}); !errors.Is(err, record.ErrCorrupt) {
		t.Fatalf("short batch: %v", err)
	}
	if l.LogEndOffset() != leo {
		t.Fatalf("LEO moved to %d", l.LogEndOffset())
	}
	res, err := l.AppendAsLeader(nil, AppendOptions{})
	if err != nil || res.LastOffset != leo-1 || l.LogEndOffset() != leo {
		t.Fatalf("empty append: %+v %v", res, err)
	}
}

func TestConcurrentReadsAndAppends(t *testing.T) {
	l := openLog(t, t.TempDir(), Config{SegmentBytes: 4096, IndexIntervalBytes: 256})
	const appends = 300
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := range appends {
			if _, err := l.AppendAsLeader([]record.Batch{plain(1+i%3, int64(i))}, AppendOptions{}); err != nil {
				t.Errorf("append: %v", err)
				return
			}
		}
	}()
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				leo := l.LogEndOffset()
				if leo == 0 {
					continue
				}
				off := int64(i*(r+7)) % leo
				sl, err := l.Read(off, 1000, -1)
				if err != nil {
					t.Errorf("read %d: %v", off, err)
					return
				}
				buf := make([]byte, sl.Len)
				_, err = sl.File.ReadAt(buf, sl.Pos)
				sl.Release()
				bs, serr := record.Split(buf)
				if err != nil || serr != nil || len(bs) == 0 || bs[0].BaseOffset() > off || bs[0].LastOffset() < off {
					t.Errorf("read %d: %v %v", off, err, serr)
					return
				}
				_ = l.Segments()
			}
		}()
	}
	wg.Wait()
}

func TestCloseAndDelete(t *testing.T) {
	dir := t.TempDir() + "/p0"
	l, err := Open(dir, Config{SegmentBytes: 1024}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 20, 0)
	sl, err := l.Read(0, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	trash, err := l.Delete()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("directory survived: %v", err)
	}
	if !strings.HasPrefix(trash, dir+".") || !strings.HasSuffix(trash, DeletedSuffix) {
		t.Fatalf("moved aside to %s", trash)
	}
	if err := os.RemoveAll(trash); err != nil {
		t.Fatal(err)
	}
	if len(readSlice(t, sl)) == 0 { // outstanding slices stay readable
		t.Fatal("slice unreadable after delete")
	}
	if _, err := l.AppendAsLeader([]record.Batch{plain(1, 0)}, AppendOptions{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after delete: %v", err)
	}
	if _, err := l.Read(0, 1, -1); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after delete: %v", err)
	}
}

// TestFollowerPageCacheWindow: appends as leader and as follower use
// their own page-cache windows, switching with the role, also across a
// roll.
func TestFollowerPageCacheWindow(t *testing.T) {
	const leaderWindow, followerWindow = 0, 1 << 20
	l := openLog(t, t.TempDir(), Config{PageCacheWindow: leaderWindow, FollowerPageCacheWindow: followerWindow, SegmentBytes: 1 << 30})
	window := func() int64 {
		l.mu.RLock()
		defer l.mu.RUnlock()
		return l.active().CacheWindow()
	}
	if _, err := l.AppendAsLeader([]record.Batch{plain(1, 1)}, AppendOptions{LeaderEpoch: 0}); err != nil {
		t.Fatal(err)
	}
	if w := window(); w != leaderWindow {
		t.Fatalf("after a leader append: window %d, want %d", w, leaderWindow)
	}
	b := plain(1, 1)
	b.SetBaseOffset(l.LogEndOffset())
	if err := l.AppendAsFollower([]record.Batch{b}); err != nil {
		t.Fatal(err)
	}
	if w := window(); w != followerWindow {
		t.Fatalf("after a follower append: window %d, want %d", w, followerWindow)
	}
	l.mu.Lock()
	err := l.roll(l.LogEndOffset(), 1)
	l.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	b = plain(1, 1)
	b.SetBaseOffset(l.LogEndOffset())
	if err := l.AppendAsFollower([]record.Batch{b}); err != nil {
		t.Fatal(err)
	}
	if w := window(); w != followerWindow {
		t.Fatalf("after a roll and a follower append: window %d, want %d", w, followerWindow)
	}
	if _, err := l.AppendAsLeader([]record.Batch{plain(1, 1)}, AppendOptions{LeaderEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	if w := window(); w != leaderWindow {
		t.Fatalf("after leading again: window %d, want %d", w, leaderWindow)
	}
}
