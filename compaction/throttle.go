package compaction

import (
	"context"
	"math"
	"sync"
	"time"
)

// throttler caps the cleaner's I/O (bytes read plus bytes written, over
// all cleaner threads) at log.cleaner.io.max.bytes.per.second, like
// Kafka's Throttler: it measures the rate over windows of checkEvery and
// sleeps whenever the rate so far is ahead of the cap. Safe for
// concurrent use.
type throttler struct {
	rate float64 // bytes per second; ≤ 0 or huge means unlimited

	mu     sync.Mutex
	start  time.Time
	amount float64
}

// checkEvery is the measurement window of the throttler.
const checkEvery = 100 * time.Millisecond

func newThrottler(rate float64) *throttler {
	return &throttler{rate: rate}
}

// unlimited reports whether the throttler never waits.
func (t *throttler) unlimited() bool {
	return t.rate <= 0 || t.rate >= math.MaxFloat64/2 || math.IsInf(t.rate, 1)
}

// add accounts for n bytes of I/O and waits as long as needed to keep the
// rate within the cap; it returns early with ctx's error.
func (t *throttler) add(ctx context.Context, n int) error {
	if t.unlimited() || n <= 0 {
		return nil
	}
	t.mu.Lock()
	now := time.Now()
	if t.start.IsZero() {
		t.start = now
	}
	t.amount += float64(n)
	elapsed := now.Sub(t.start)
	var wait time.Duration
	if elapsed >= checkEvery || t.amount >= t.rate*checkEvery.Seconds() {
		due := time.Duration(t.amount / t.rate * float64(time.Second))
		wait = due - elapsed
		t.start, t.amount = now.Add(max(wait, 0)), 0
	}
	t.mu.Unlock()
	if wait <= 0 {
		return nil
	}
	return sleepCtx(ctx, wait)
}

// sleepCtx sleeps for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}
