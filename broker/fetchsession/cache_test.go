package fetchsession

import (
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

func part(topic string, p int32, offset int64) Partition {
	return Partition{Key: Key{Topic: topic, Partition: p}, Name: topic, FetchOffset: offset, LogStartOffset: -1, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}
}

// idle is the answer of a partition with nothing new at high watermark hw.
func idle(hw int64) Answer {
	return Answer{HighWatermark: hw, LogStartOffset: 0, PreferredReadReplica: -1}
}

// open runs a full fetch of parts and returns the session id.
func open(t *testing.T, c *Cache, follower bool, parts ...Partition) int32 {
	t.Helper()
	x := c.NewContext(Request{Version: 12, Epoch: InitialEpoch, Follower: follower, Parts: parts}, time.Now())
	if x.Kind != Full {
		t.Fatalf("kind %d, want Full", x.Kind)
	}
	answers := make([]Answer, len(parts))
	for i := range answers {
		answers[i] = idle(0)
	}
	id, _, err := x.Respond(nil, answers, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestEpochs(t *testing.T) {
	c := New(10, 1, EvictAfter)
	id := open(t, c, false, part("a", 0, 0), part("a", 1, 0))
	if id == InvalidSessionID {
		t.Fatal("no session opened")
	}
	for _, tc := range []struct {
		name  string
		id    int32
		epoch int32
		want  error
		kind  Kind
	}{
		{"unknown id", id + 1, 1, ErrSessionNotFound, Failed},
		{"zero id incremental", 0, 1, ErrSessionNotFound, Failed},
		{"epoch ahead", id, 2, ErrInvalidEpoch, Failed},
		{"expected epoch", id, 1, nil, Incremental},
		{"repeated epoch", id, 1, ErrInvalidEpoch, Failed},
		{"next epoch", id, 2, nil, Incremental},
	} {
		x := c.NewContext(Request{Version: 12, SessionID: tc.id, Epoch: tc.epoch}, time.Now())
		if x.Kind != tc.kind || !errors.Is(x.Err, tc.want) {
			t.Fatalf("%s: kind %d err %v, want %d %v", tc.name, x.Kind, x.Err, tc.kind, tc.want)
		}
		if x.Kind == Incremental {
			if _, _, err := x.Respond(nil, []Answer{idle(0), idle(0)}, time.Now()); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
	}
	if x := c.NewContext(Request{Version: 13, SessionID: id, Epoch: 3}, time.Now()); !errors.Is(x.Err, ErrTopicID) {
		t.Fatalf("v13 on a session by name: %v, want ErrTopicID", x.Err)
	}
	// A full fetch naming the session closes it; FinalEpoch opens none.
	x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: FinalEpoch, Parts: []Partition{part("a", 0, 0)}}, time.Now())
	if x.Kind != Sessionless || c.Sessions() != 0 {
		t.Fatalf("final epoch: kind %d, %d sessions", x.Kind, c.Sessions())
	}
	if got, _, _ := x.Respond(nil, []Answer{idle(0)}, time.Now()); got != InvalidSessionID {
		t.Fatalf("sessionless answer carries session %d", got)
	}
	if x := c.NewContext(Request{Version: 6, SessionID: 5, Epoch: 3}, time.Now()); x.Kind != Sessionless {
		t.Fatalf("v6: kind %d, want Sessionless", x.Kind)
	}
}

func TestIncrementalChangedRule(t *testing.T) {
	c := New(10, 1, EvictAfter)
	id := open(t, c, false, part("a", 0, 5), part("a", 1, 5), part("b", 0, 5))
	epoch := int32(1)
	step := func(req []Partition, forgotten []Key, answers func([]Partition) []Answer) ([]Partition, []bool) {
		t.Helper()
		x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: epoch, Parts: req, Forgotten: forgotten}, time.Now())
		if x.Kind != Incremental {
			t.Fatalf("kind %d (%v), want Incremental", x.Kind, x.Err)
		}
		epoch = NextEpoch(epoch)
		got, keep, err := x.Respond(nil, answers(x.Parts), time.Now())
		if err != nil || got != id {
			t.Fatalf("respond: id %d err %v", got, err)
		}
		return x.Parts, keep
	}
	all := func(a Answer) func([]Partition) []Answer {
		return func(ps []Partition) []Answer {
			out := make([]Answer, len(ps))
			for i := range out {
				out[i] = a
			}
			return out
		}
	}
	// Nothing changed: nothing carried.
	_, keep := step(nil, nil, all(idle(0)))
	if keep[0] || keep[1] || keep[2] {
		t.Fatalf("idle session answered %v", keep)
	}
	// Each kind of change is carried, and only where it happened.
	a1 := Key{Topic: "a", Partition: 1}
	last := idle(0) // what a-1 last answered; the others stay idle(0)
	for _, tc := range []struct {
		name   string
		change func(*Answer)
	}{
		{"records", func(a *Answer) { a.Records = true }},
		{"high watermark", func(a *Answer) { a.HighWatermark++ }},
		{"log start", func(a *Answer) { a.LogStartOffset++ }},
		{"preferred replica", func(a *Answer) { a.PreferredReadReplica = 2 }},
		{"diverging", func(a *Answer) { a.DivergingEpoch = true }},
	} {
		changed := last
		tc.change(&changed)
		parts, keep := step(nil, nil, func(ps []Partition) []Answer {
			out := all(idle(0))(ps)
			for i, p := range ps {
				if p.Key == a1 {
					out[i] = changed
				}
			}
			return out
		})
		for i, p := range parts {
			if keep[i] != (p.Key == a1) {
				t.Fatalf("%s: %v carried %v", tc.name, p.Key, keep[i])
			}
		}
		last = Answer{HighWatermark: changed.HighWatermark, LogStartOffset: changed.LogStartOffset, PreferredReadReplica: -1}
	}
	// The partition that answered records moved to the end.
	answers := func(ps []Partition) []Answer {
		out := all(idle(0))(ps)
		for i, p := range ps {
			if p.Key == a1 {
				out[i] = last
			}
		}
		return out
	}
	parts, _ := step(nil, nil, answers)
	if parts[2].Key != a1 {
		t.Fatalf("order %v: a-1 answered records and should be last", parts)
	}
	// An error is carried, and the partition again once it is gone.
	step(nil, nil, func(ps []Partition) []Answer {
		out := answers(ps)
		out[0].ErrorCode = 6
		return out
	})
	_, keep = step(nil, nil, answers)
	if !keep[0] || keep[1] || keep[2] {
		t.Fatalf("after an error: carried %v, want only the first", keep)
	}
	// Changed fetch parameters are taken; a new partition joins; a
	// forgotten one leaves.
	parts, _ = step([]Partition{part("b", 0, 9), part("c", 0, 0)}, []Key{{Topic: "a", Partition: 0}}, all(idle(1)))
	if len(parts) != 3 || parts[0].Key.Topic != "b" || parts[0].FetchOffset != 9 || parts[2].Key.Topic != "c" {
		t.Fatalf("after the update the session reads %v", parts)
	}
	// Forgetting everything closes the session.
	x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: epoch, Forgotten: []Key{{"b", [16]byte{}, 0}, {"c", [16]byte{}, 0}, {"a", [16]byte{}, 1}}}, time.Now())
	if x.Kind != Sessionless || c.Sessions() != 0 {
		t.Fatalf("emptied session: kind %d, %d sessions", x.Kind, c.Sessions())
	}
}

func TestEpochMovedDuringFetch(t *testing.T) {
	c := New(10, 1, EvictAfter)
	id := open(t, c, false, part("a", 0, 0))
	first := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 1}, time.Now())
	c.NewContext(Request{Version: 12, SessionID: id, Epoch: 2}, time.Now())
	if got, _, err := first.Respond(nil, []Answer{idle(0)}, time.Now()); !errors.Is(err, ErrInvalidEpoch) || got != id {
		t.Fatalf("overtaken fetch: id %d err %v, want %d ErrInvalidEpoch", got, err, id)
	}
}

func TestEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(2, 1, EvictAfter)
		small := open(t, c, false, part("a", 0, 0))
		open(t, c, false, part("a", 0, 0), part("a", 1, 0))
		// Full and nothing evictable yet: sessions younger than EvictAfter
		// are only evictable by a follower's.
		if id := open(t, c, false, part("a", 0, 0), part("a", 1, 0), part("a", 2, 0)); id != InvalidSessionID {
			t.Fatal("a consumer's session evicted a young one")
		}
		follower := open(t, c, true, part("a", 0, 0))
		if follower == InvalidSessionID || c.Remove(small) || c.Evictions() != 1 {
			t.Fatalf("the follower's session should have evicted the smallest consumer's (evictions %d)", c.Evictions())
		}
		// Young sessions, one a follower's: a consumer's session cannot
		// evict either.
		if id := open(t, c, false, part("a", 0, 0), part("a", 1, 0), part("a", 2, 0)); id != InvalidSessionID {
			t.Fatal("a consumer's session evicted a young one")
		}
		// Use the follower's session now and then; the other idles past
		// EvictAfter and goes first.
		epoch := int32(1)
		for range 3 {
			time.Sleep(EvictAfter / 2)
			x := c.NewContext(Request{Version: 12, SessionID: follower, Epoch: epoch}, time.Now())
			if x.Kind != Incremental {
				t.Fatalf("follower's session: kind %d (%v)", x.Kind, x.Err)
			}
			epoch = NextEpoch(epoch)
		}
		if id := open(t, c, false, part("a", 0, 0)); id == InvalidSessionID || c.Evictions() != 2 {
			t.Fatal("the stale session was not evicted")
		}
		if c.Sessions() != 2 || !c.Remove(follower) || c.Remove(follower) {
			t.Fatal("the follower's session should remain")
		}
	})
}

func TestEvictionByValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(1, 1, EvictAfter)
		old := open(t, c, false, part("a", 0, 0), part("a", 1, 0))
		// Keep it in use past EvictAfter, so it is old but never stale.
		epoch := int32(1)
		for range 3 {
			time.Sleep(EvictAfter / 2)
			x := c.NewContext(Request{Version: 12, SessionID: old, Epoch: epoch}, time.Now())
			x.Respond(nil, []Answer{idle(0), idle(0)}, time.Now())
			epoch = NextEpoch(epoch)
		}
		if open(t, c, false, part("a", 0, 0), part("a", 1, 0)) != InvalidSessionID {
			t.Fatal("a session no bigger evicted an old one")
		}
		if open(t, c, false, part("a", 0, 0), part("a", 1, 0), part("a", 2, 0)) == InvalidSessionID || c.Remove(old) {
			t.Fatal("a bigger session did not evict the old one")
		}
	})
}

func TestShards(t *testing.T) {
	c := New(16, Shards, EvictAfter)
	seen := map[int]bool{}
	for range 16 {
		id := open(t, c, false, part("a", 0, 0))
		if id == InvalidSessionID {
			t.Fatal("no room in a cache with free slots")
		}
		seen[int(id/(math.MaxInt32/Shards))] = true
	}
	if len(seen) != Shards || open(t, c, false, part("a", 0, 0)) != InvalidSessionID {
		t.Fatalf("sessions over %d shards, want %d, and no 17th", len(seen), Shards)
	}
	if c.Partitions() != 16 {
		t.Fatalf("%d partitions cached, want 16", c.Partitions())
	}
}

func TestNextEpoch(t *testing.T) {
	for in, want := range map[int32]int32{FinalEpoch: FinalEpoch, 0: 1, 7: 8, math.MaxInt32: 1} {
		if got := NextEpoch(in); got != want {
			t.Errorf("NextEpoch(%d) = %d, want %d", in, got, want)
		}
	}
}
