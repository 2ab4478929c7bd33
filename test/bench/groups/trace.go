package main

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// tracer records the group requests of the rebalance members (-trace):
// for each FindCoordinator, JoinGroup, SyncGroup and Heartbeat, which
// member sent it, when (from the start of the measure) and how long its
// round trip took. The members' hooks call it concurrently.
type tracer struct {
	start time.Time
	mu    sync.Mutex
	steps []step
}

// step is one traced request.
type step struct {
	member     int
	key        int16
	start, dur time.Duration
}

// hook returns member i's franz-go hook.
func (t *tracer) hook(i int) kgo.Hook { return traceHook{t, i} }

type traceHook struct {
	t      *tracer
	member int
}

// OnBrokerE2E implements kgo.HookBrokerE2E.
func (h traceHook) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	switch kmsg.Key(key) {
	case kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat:
	default:
		return
	}
	d := e2e.DurationE2E()
	h.t.mu.Lock()
	h.t.steps = append(h.t.steps, step{h.member, key, time.Since(h.t.start) - d, d})
	h.t.mu.Unlock()
}

// String lists the steps by start time: "m3 J 6.6+101.2" is member 3's
// JoinGroup sent 6.6 ms after the start and answered 101.2 ms later.
func (t *tracer) String() string {
	t.mu.Lock()
	steps := slices.Clone(t.steps)
	t.mu.Unlock()
	slices.SortFunc(steps, func(a, b step) int { return int(a.start - b.start) })
	var sb strings.Builder
	for i, s := range steps {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "m%d %c %.1f+%.1f", s.member, kmsg.NameForKey(s.key)[0], ms(s.start), ms(s.dur))
	}
	return sb.String()
}
