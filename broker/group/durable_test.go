package group

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// replLog is a testLog whose high watermark the test moves, like a
// replicated partition waiting for its followers.
type replLog struct {
	*testLog
	hw      atomic.Int64
	leader  atomic.Bool
	mu      sync.Mutex
	waiters []chan struct{}
}

func newReplLog(tl *testLog) *replLog {
	r := &replLog{testLog: tl}
	r.leader.Store(true)
	r.hw.Store(tl.L.LogEndOffset())
	return r
}

func (r *replLog) HighWatermark() int64 { return r.hw.Load() }
func (r *replLog) IsLeader() bool       { return r.leader.Load() }

func (r *replLog) Wait(ch chan struct{}) {
	r.mu.Lock()
	r.waiters = append(r.waiters, ch)
	r.mu.Unlock()
}

func (r *replLog) Unwait(ch chan struct{}) {
	r.mu.Lock()
	r.waiters = slices.DeleteFunc(r.waiters, func(w chan struct{}) bool { return w == ch })
	r.mu.Unlock()
}

func (r *replLog) wake() {
	r.mu.Lock()
	ws := r.waiters
	r.waiters = nil
	r.mu.Unlock()
	for _, w := range ws {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// replicate moves the high watermark to the log end once an append is
// waiting for it.
func (r *replLog) replicateWhenWaited(t *testing.T) {
	go func() {
		for range 10000 {
			r.mu.Lock()
			n := len(r.waiters)
			r.mu.Unlock()
			if n > 0 {
				r.hw.Store(r.L.LogEndOffset())
				r.wake()
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Error("no append waited for the high watermark")
	}()
}

func TestCommitWaitsForHighWatermark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(c *Config) { c.CommitTimeout = 50 * time.Millisecond })
		e.c.Close()
		rl := newReplLog(e.log)
		e.log2 = rl
		e.start()
		req := CommitRequest{Group: "g", Generation: -1, Offsets: []CommitOffset{commit(tp0, offset(5, -1, ""))}}

		// Replicated: acknowledged once the high watermark passes the batch.
		rl.replicateWhenWaited(t)
		wantErr(t, "replicated commit", e.c.CommitOffsets(req)[0], nil)
		if o, _ := e.c.FetchOffsets("g", []TopicPartition{tp0}); o[tp0].Offset != 5 {
			t.Fatalf("offset %+v", o)
		}

		// Not replicated in time: COORDINATOR_NOT_AVAILABLE, offset unchanged.
		req.Offsets[0].Offset.Offset = 6
		wantErr(t, "unreplicated commit", e.c.CommitOffsets(req)[0], ErrCoordinatorNotAvailable)
		if o, _ := e.c.FetchOffsets("g", []TopicPartition{tp0}); o[tp0].Offset != 5 {
			t.Fatalf("offset after a timed-out commit %+v", o)
		}

		// Leadership lost while waiting: NOT_COORDINATOR.
		rl.leader.Store(false)
		wantErr(t, "commit on a lost partition", e.c.CommitOffsets(req)[0], ErrNotCoordinator)

		// A resigned partition unloads its groups.
		rl.leader.Store(true)
		e.c.Resign(0)
		_, err := e.c.FetchOffsets("g", nil)
		wantErr(t, "fetch after resign", err, ErrNotCoordinator)
	})
}

func TestConsumerGroupSurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newConsumerEnv(t)
		e.cfg.ConsumerSessionTimeout = 30 * time.Second
		e.restart()
		r1 := e.join("m1", func(r *ConsumerHeartbeatRequest) { r.InstanceID = ptr("i1") })
		r2 := e.join("m2", nil)
		h := e.beat("m1", 1, r1.Assignment)
		kept := h.Assignment
		if h = e.beat("m1", 1, kept); h.Err != nil || h.MemberEpoch != 2 {
			t.Fatalf("m1 confirms %+v", h)
		}
		h2 := e.beat("m2", r2.MemberEpoch, Assignment{})
		if h2.Err != nil || h2.Assignment.count() != 2 {
			t.Fatalf("m2 %+v", h2)
		}

		e.restart()
		d, err := e.c.DescribeConsumerGroup("cg")
		if err != nil || d.State != "Stable" || d.Epoch != 2 || len(d.Members) != 2 {
			t.Fatalf("describe after restart %+v %v", d, err)
		}
		// Members go on where they were: no UNKNOWN_MEMBER_ID, no new epoch.
		if h = e.beat("m1", 2, kept); h.Err != nil || h.MemberEpoch != 2 || !h.Assignment.equal(kept) {
			t.Fatalf("m1 after restart %+v", h)
		}
		if h = e.beat("m2", 2, h2.Assignment); h.Err != nil || h.MemberEpoch != 2 || !h.Assignment.equal(h2.Assignment) {
			t.Fatalf("m2 after restart %+v", h)
		}

		// m2 crashes: its session expires, m1 takes everything, and that too
		// survives a restart.
		for range 4 {
			advance(10 * time.Second)
			e.beat("m1", 2, kept)
		}
		e.restart()
		if h = e.beat("m2", 2, h2.Assignment); h.Err == nil {
			t.Fatalf("expired m2 heartbeats after restart: %+v", h)
		}
		d, _ = e.c.DescribeConsumerGroup("cg")
		if len(d.Members) != 1 || d.Members[0].MemberID != "m1" {
			t.Fatalf("members after expiry and restart %+v", d.Members)
		}
		if h = e.beat("m1", d.Members[0].MemberEpoch, kept); h.Err != nil {
			t.Fatalf("m1 after second restart %+v", h)
		}

		// Deleting the empty group deletes its records.
		if r := e.beat("m1", -1, nil); r.Err != nil {
			t.Fatalf("leave %+v", r)
		}
		wantErr(t, "delete", e.c.DeleteGroup("cg"), nil)
		e.restart()
		if _, err := e.c.DescribeConsumerGroup("cg"); err == nil {
			t.Fatal("deleted group came back after restart")
		}
	})
}

func ptr[T any](v T) *T { return &v }
