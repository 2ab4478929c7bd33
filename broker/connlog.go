package broker

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Connection log lines at Warn and above, over all connections: at most
// connLogBurst at once and one per connLogEvery on average. A client
// that opens connections and sends garbage so costs the log a line a
// second, not a line per connection.
const (
	connLogBurst = 10
	connLogEvery = time.Second
)

// logLimit is a token bucket shared by every connection's logger.
type logLimit struct {
	mu      sync.Mutex
	tokens  float64   // guarded by mu
	last    time.Time // when tokens was last refilled; guarded by mu
	dropped int       // lines dropped since the last one passed; guarded by mu
}

func newLogLimit() *logLimit { return &logLimit{tokens: connLogBurst, last: time.Now()} }

// take reports whether a line may pass now, and how many were dropped
// since the last one that passed.
func (l *logLimit) take() (dropped int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.tokens = min(connLogBurst, l.tokens+float64(now.Sub(l.last))/float64(connLogEvery))
	l.last = now
	if l.tokens < 1 {
		l.dropped++
		return 0, false
	}
	l.tokens--
	dropped, l.dropped = l.dropped, 0
	return dropped, true
}

// limitedHandler passes records below Warn as they are, and those at
// Warn and above within lim; the first to pass after some were dropped
// says how many ("suppressed").
type limitedHandler struct {
	slog.Handler
	lim *logLimit
}

func (h limitedHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.Handler.Handle(ctx, r)
	}
	dropped, ok := h.lim.take()
	if !ok {
		return nil
	}
	if dropped > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed", dropped))
	}
	return h.Handler.Handle(ctx, r)
}

func (h limitedHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return limitedHandler{h.Handler.WithAttrs(as), h.lim}
}

func (h limitedHandler) WithGroup(name string) slog.Handler {
	return limitedHandler{h.Handler.WithGroup(name), h.lim}
}
