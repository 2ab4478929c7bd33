package broker

import (
	"context"
	"errors"
	"os"
	"testing"
	"testing/synctest"
	"time"
)

// waitAsync runs b.Wait on its own goroutine; the channel gets its result.
func waitAsync(b *connBudget) <-chan error {
	done := make(chan error, 1)
	go func() { done <- b.Wait() }()
	return done
}

// blocked reports whether done has no result yet, once every goroutine
// of the bubble is blocked.
func blocked(done <-chan error) bool {
	synctest.Wait()
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// TestRequestMemoryPausesAndResumes: past their free bytes, frames pause
// while the count is at queued.max.request.bytes, except the oldest one
// being read, so three frames read part-way do not wait on each other;
// each resumes when bytes are given back or it becomes the oldest. Small
// frames never pause.
func TestRequestMemoryPausesAndResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newRequestMemory(128 << 10)
		ctx := context.Background()
		b1, b2, b3 := &connBudget{mem: m, ctx: ctx}, &connBudget{mem: m, ctx: ctx}, &connBudget{mem: m, ctx: ctx}
		for _, b := range []*connBudget{b1, b2, b3} {
			if err := b.Wait(); err != nil {
				t.Fatal(err)
			}
			b.Add(70 << 10) // all three past their free bytes: 210 KiB counted
		}
		if err := b1.Wait(); err != nil { // the oldest goes on over the limit
			t.Fatal(err)
		}
		w2 := waitAsync(b2)
		if !blocked(w2) {
			t.Fatal("a frame read on although the count is over the limit")
		}
		w3 := waitAsync(b3) // after b2 entered: b2 is older
		if !blocked(w3) {
			t.Fatal("a frame read on although the count is over the limit")
		}
		small := &connBudget{mem: m, ctx: ctx}
		small.Add(1 << 10)
		if err := small.Wait(); err != nil { // within its free bytes: no pause
			t.Fatal(err)
		}
		m.release(small.take())

		m.release(b1.take()) // b1 read and handled: 140 KiB, b2 the oldest
		if blocked(w2) {
			t.Fatal("the oldest frame still paused")
		}
		if !blocked(w3) {
			t.Fatal("b3 read on: neither under the limit nor the oldest")
		}
		m.release(b2.take()) // 70 KiB: under the limit
		if blocked(w3) {
			t.Fatal("b3 still paused under the limit")
		}
		m.release(b3.take())
		if got := m.used.Load(); got != 0 {
			t.Fatalf("%d bytes still counted", got)
		}
	})
}

// TestRequestMemoryPauseEnds: a paused frame gives up at its deadline
// (os.ErrDeadlineExceeded) or when its connection stops reading.
func TestRequestMemoryPauseEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newRequestMemory(64 << 10)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		oldest := &connBudget{mem: m, ctx: ctx}
		oldest.Add(100 << 10)
		if err := oldest.Wait(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		late := &connBudget{mem: m, ctx: ctx, deadline: start.Add(time.Minute)}
		late.Add(100 << 10)
		if err := late.Wait(); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("paused frame: %v, want its deadline", err)
		}
		if waited := time.Since(start); waited != time.Minute {
			t.Fatalf("gave up after %v, want the deadline's minute", waited)
		}
		m.release(late.take())

		stopped := &connBudget{mem: m, ctx: ctx}
		stopped.Add(100 << 10)
		w := waitAsync(stopped)
		if !blocked(w) {
			t.Fatal("frame read on over the limit")
		}
		cancel()
		if err := <-w; !errors.Is(err, context.Canceled) {
			t.Fatalf("stopped reading: %v", err)
		}
	})
}
