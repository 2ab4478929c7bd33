package broker

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recordLog is a slog.Handler that keeps the records at Info and above.
type recordLog struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *recordLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelInfo }
func (l *recordLog) WithAttrs([]slog.Attr) slog.Handler            { return l }
func (l *recordLog) WithGroup(string) slog.Handler                 { return l }

func (l *recordLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}

// messages returns the records with message msg.
func (l *recordLog) messages(msg string) []slog.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []slog.Record
	for _, r := range l.recs {
		if r.Message == msg {
			out = append(out, r)
		}
	}
	return out
}

// attr is the value of r's attribute key ("" when absent).
func attr(r slog.Record, key string) string {
	var v string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}

// TestConnectionLogRateLimited: Warn lines of connections pass at most
// connLogBurst at once and one per connLogEvery after, over all
// connection loggers; the first to pass after a drop says how many were
// dropped; Info and Debug lines are not limited.
func TestConnectionLogRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recordLog
		base := slog.New(limitedHandler{&rec, newLogLimit()})
		a, b := base.With("remote", "a"), base.With("remote", "b")
		for i := range 50 {
			[]*slog.Logger{a, b}[i%2].Warn("bad")
			a.Info("fine")
		}
		if got := len(rec.messages("bad")); got != connLogBurst {
			t.Fatalf("%d of 50 warnings passed at once, want %d", got, connLogBurst)
		}
		if got := len(rec.messages("fine")); got != 50 {
			t.Fatalf("%d of 50 info lines passed, want all", got)
		}
		time.Sleep(connLogEvery)
		b.Error("worse")
		b.Warn("bad")
		worse := rec.messages("worse")
		if len(worse) != 1 || attr(worse[0], "suppressed") != "40" {
			t.Fatalf("after %v: %d lines, suppressed %q; want 1 saying 40", connLogEvery, len(worse), attr(worse[0], "suppressed"))
		}
		if got := len(rec.messages("bad")); got != connLogBurst {
			t.Fatalf("a second line passed within %v", connLogEvery)
		}
		time.Sleep(connLogBurst * connLogEvery)
		for range 2 * connLogBurst {
			a.Warn("again")
		}
		again := rec.messages("again")
		if len(again) != connLogBurst || attr(again[0], "suppressed") != "1" || slices.ContainsFunc(again[1:], func(r slog.Record) bool { return attr(r, "suppressed") != "" }) {
			t.Fatalf("after a quiet spell: %d lines, want a full burst of %d, the first saying 1 suppressed", len(again), connLogBurst)
		}
	})
}
