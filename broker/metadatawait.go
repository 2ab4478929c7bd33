package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/strata-broker/strata/metadata"
)

// metadataWaitLogEvery is how often a start-up still waiting for the metadata
// store says so.
const metadataWaitLogEvery = 10 * time.Second

// metadataWait is the start-up's wait for the metadata store. The steps that
// need it ("metadata store": load the metadata; "registration") retry
// while it is unavailable — etcd not started yet, no quorum — for up to
// initial.broker.registration.timeout.ms in all, as a KRaft broker waits
// for the controller quorum, and log while they wait: once at once, then
// every metadataWaitLogEvery. The Kafka listener is bound but accepts no
// client until every step ran. Past the deadline the start fails (Run
// returns an error: a non-zero exit). Used by Run's goroutine only.
type metadataWait struct {
	log      *slog.Logger
	timeout  time.Duration
	deadline time.Time // set by the first bound
	began    time.Time // first failure; zero while nothing waited
	logged   time.Time
}

// errStartTimeout: the metadata store stayed unavailable for the whole
// initial.broker.registration.timeout.ms.
var errStartTimeout = errors.New("metadata store unavailable for initial.broker.registration.timeout.ms")

// bound returns ctx ending at the start-up deadline (timeout after the
// first call), with errStartTimeout as its cause.
func (w *metadataWait) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if w.deadline.IsZero() {
		w.deadline = time.Now().Add(w.timeout)
	}
	return context.WithDeadlineCause(ctx, w.deadline, fmt.Errorf("%w (%v)", errStartTimeout, w.timeout))
}

// waiting logs an attempt that found the store unavailable.
func (w *metadataWait) waiting(err error) {
	now := time.Now()
	switch {
	case w.began.IsZero():
		w.began, w.logged = now, now
		w.log.Warn("metadata store unavailable; waiting for it before accepting clients",
			"err", err, "gives_up_in", w.deadline.Sub(now).Round(time.Second))
	case now.Sub(w.logged) >= metadataWaitLogEvery:
		w.logged = now
		w.log.Info("still waiting for the metadata store; accepting no clients",
			"for", now.Sub(w.began).Round(time.Second), "err", err, "gives_up_in", w.deadline.Sub(now).Round(time.Second))
	}
}

// ready logs the end of a wait, if there was one.
func (w *metadataWait) ready(what string) {
	if !w.began.IsZero() {
		w.log.Info("metadata store available; "+what, "waited", time.Since(w.began).Round(time.Millisecond))
		w.began = time.Time{}
	}
}

// retry runs attempt until it succeeds, fails with an error other than
// metadata.ErrUnavailable, or ctx (bound to the deadline) ends.
func (w *metadataWait) retry(ctx context.Context, attempt func(context.Context) error) error {
	backoff := registerRetryMin
	for {
		actx, cancel := context.WithTimeout(ctx, registerAttempt)
		err := attempt(actx)
		cancel()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("%w (last attempt: %v)", context.Cause(ctx), err)
		case !errors.Is(err, metadata.ErrUnavailable):
			return err
		}
		w.waiting(err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		backoff = min(2*backoff, registerRetryMax)
	}
}
