package remote

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"
)

// waitCond polls cond until it holds, failing the test after bound. The
// bound only stops a broken run; it is no timing assertion.
func waitCond(t *testing.T, what string, bound time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runManager runs f.m.Run until the test ends, counting the calls of its
// partition source (one per full pass and one per poll) in calls; hidden
// hides the partition.
func runManager(t *testing.T, f *fixture, calls *atomic.Int64, hidden *atomic.Bool) {
	f.m.src = func() []PartitionInfo {
		calls.Add(1)
		if hidden.Load() {
			return nil
		}
		return f.source()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// TestRunCopiesSealedSegmentsBetweenPasses: with an hour-long task
// interval, Run still copies newly sealed segments and applies local
// retention long before the next full pass, for a partition that appeared
// after the first pass (metadata not yet loaded) and again once loaded.
func TestRunCopiesSealedSegmentsBetweenPasses(t *testing.T) {
	f := newFixture(t, nil)
	var calls atomic.Int64
	var hidden atomic.Bool
	hidden.Store(true)
	runManager(t, f, &calls, &hidden)
	// The second call of the source is the first poll after the first
	// full pass, which saw no partition.
	waitCond(t, "the first full pass", 30*time.Second, func() bool { return calls.Load() >= 2 })

	for round := range 2 {
		hidden.Store(true) // no poll copies while the batches are recorded
		f.produce(60)
		end := int64(-1)
		for _, s := range f.log.Segments() {
			if s.Sealed {
				end = s.NextOffset - 1
			}
		}
		if end < 0 {
			t.Fatalf("round %d: nothing sealed", round)
		}
		hidden.Store(false)
		waitCond(t, "the sealed segments to be copied and dropped locally", 30*time.Second, func() bool {
			return copiedEnd(f.records()) >= end && f.log.LogStartOffset() > end
		})
	}
	if sealed(f) != 0 {
		t.Fatalf("%d sealed segments left locally with local.retention.bytes=0", sealed(f))
	}
	fin := finished(f.records())
	for i, s := range fin {
		if (i == 0 && s.BaseOffset != 0) || (i > 0 && s.BaseOffset != fin[i-1].EndOffset+1) {
			t.Fatalf("copy %d starts at %d: a gap or an overlap", i, s.BaseOffset)
		}
	}
	if n := countKeys(t, f.store, ".log"); n != len(fin) {
		t.Fatalf("%d .log objects for %d finished copies", n, len(fin))
	}
}

// attemptStore counts Put calls, failed ones included.
type attemptStore struct {
	*flakyStore
	attempts atomic.Int64
}

func (s *attemptStore) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	s.attempts.Add(1)
	return s.flakyStore.Put(ctx, key, body, size)
}

// TestRunPollDoesNotRetryFailedCopy: with the bucket down, a copy that
// failed in a poll is left to the next full pass instead of being retried
// every poll.
func TestRunPollDoesNotRetryFailedCopy(t *testing.T) {
	store := &attemptStore{flakyStore: newFlaky(t)}
	store.down.Store(true)
	f := newFixture(t, store)
	f.produce(60)
	var calls atomic.Int64
	var hidden atomic.Bool
	runManager(t, f, &calls, &hidden)
	waitCond(t, "the first full pass to try a copy", 30*time.Second, func() bool { return store.attempts.Load() > 0 })
	// Passes and polls run one after another, each calling the source
	// once: once it was called twice more, a whole poll ran after the
	// failed pass (and failed once itself).
	n := calls.Load()
	waitCond(t, "a poll after the failed pass", 30*time.Second, func() bool { return calls.Load() >= n+2 })
	attempts := store.attempts.Load()
	n = calls.Load()
	waitCond(t, "five more polls", 30*time.Second, func() bool { return calls.Load() >= n+5 })
	if got := store.attempts.Load(); got != attempts {
		t.Fatalf("%d put attempts during five polls with the copy held", got-attempts)
	}
	if f.log.LogStartOffset() != 0 {
		t.Fatal("local segments deleted without a remote copy")
	}
}
