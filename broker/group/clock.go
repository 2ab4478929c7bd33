package group

import "time"

// clock is the coordinator's time source; tests replace it with a manual
// clock so that session, rebalance and retention timeouts are deterministic.
type clock interface {
	Now() time.Time
	// AfterFunc runs f on its own goroutine after d.
	AfterFunc(d time.Duration, f func()) timer
}

// timer is a scheduled function that can be cancelled.
type timer interface {
	// Stop prevents the function from running if it has not started.
	Stop() bool
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }
