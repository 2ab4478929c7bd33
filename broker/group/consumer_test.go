package group

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func tid(b byte) [16]byte { return [16]byte{b} }

// topicSet is a mutable topic list for SetTopics.
type topicSet struct {
	mu     sync.Mutex
	topics []TopicInfo
}

func (ts *topicSet) list() []TopicInfo {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]TopicInfo(nil), ts.topics...)
}

func (ts *topicSet) set(t ...TopicInfo) {
	ts.mu.Lock()
	ts.topics = t
	ts.mu.Unlock()
}

func TestAssignUniformBalancedAndSticky(t *testing.T) {
	a := TopicInfo{"a", tid(1), 5}
	b := TopicInfo{"b", tid(2), 3}
	subs := []subscriber{{"m1", []TopicInfo{a, b}}, {"m2", []TopicInfo{a, b}}, {"m3", []TopicInfo{a}}}
	got := assignUniform(subs, nil)
	total := 0
	for _, s := range subs {
		n := got[s.id].count()
		total += n
		if n < 2 || n > 3 {
			t.Errorf("%s got %d partitions: %v", s.id, n, got)
		}
	}
	if total != 8 {
		t.Fatalf("assigned %d of 8 partitions", total)
	}
	if len(got["m3"][b.ID]) != 0 {
		t.Fatalf("m3 got a partition of an unsubscribed topic")
	}
	// A fourth member takes partitions from the others; nobody else moves
	// more than needed.
	subs = append(subs, subscriber{"m4", []TopicInfo{a, b}})
	next := assignUniform(subs, got)
	moved := 0
	for _, s := range subs[:3] {
		moved += got[s.id].minus(next[s.id]).count()
	}
	if n := next["m4"].count(); n != 2 || moved != 2 {
		t.Fatalf("m4 got %d partitions, %d moved: %v → %v", n, moved, got, next)
	}
}

func TestAssignRange(t *testing.T) {
	a := TopicInfo{"a", tid(1), 5}
	got := assignRange([]subscriber{{"m1", []TopicInfo{a}}, {"m2", []TopicInfo{a}}})
	if fmt.Sprint(got["m1"][a.ID]) != "[0 1 2]" || fmt.Sprint(got["m2"][a.ID]) != "[3 4]" {
		t.Fatalf("range assignment %v", got)
	}
}

// consumerEnv is a coordinator with a topic source.
type consumerEnv struct {
	*env
	topics *topicSet
}

func newConsumerEnv(t *testing.T) *consumerEnv {
	e := newEnv(t, nil)
	ts := &topicSet{}
	ts.set(TopicInfo{"t", tid(1), 4})
	e.c.SetTopics(ts.list)
	e.setup = func(c *Coordinator) { c.SetTopics(ts.list) }
	return &consumerEnv{e, ts}
}

func (e *consumerEnv) join(id string, mod func(*ConsumerHeartbeatRequest)) ConsumerHeartbeatResult {
	req := ConsumerHeartbeatRequest{Group: "cg", MemberID: id, RebalanceTimeout: 10 * time.Second,
		SubscribedTopics: []string{"t"}, Owned: Assignment{}}
	if mod != nil {
		mod(&req)
	}
	return e.c.ConsumerHeartbeat(req)
}

func (e *consumerEnv) beat(id string, epoch int32, owned Assignment) ConsumerHeartbeatResult {
	return e.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "cg", MemberID: id, MemberEpoch: epoch, RebalanceTimeout: -1, Owned: owned})
}

func parts(a Assignment) string { return fmt.Sprint(a[tid(1)]) }

func TestConsumerGroupIncrementalRebalance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newConsumerEnv(t)
		r1 := e.join("m1", nil)
		if r1.Err != nil || r1.MemberEpoch != 1 || parts(r1.Assignment) != "[0 1 2 3]" {
			t.Fatalf("first join %+v", r1)
		}
		r2 := e.join("m2", nil)
		if r2.Err != nil || r2.MemberEpoch != 2 || r2.Assignment.count() != 0 {
			t.Fatalf("second join %+v (its partitions are still m1's)", r2)
		}
		// m1 learns it must give up two partitions; its epoch stays.
		h := e.beat("m1", 1, r1.Assignment)
		if h.Err != nil || h.MemberEpoch != 1 || h.Assignment.count() != 2 {
			t.Fatalf("m1 heartbeat %+v", h)
		}
		kept := h.Assignment
		// m2 still waits: m1 has not confirmed.
		if h2 := e.beat("m2", 2, Assignment{}); h2.Err != nil || h2.Assignment != nil {
			t.Fatalf("m2 heartbeat before the revocation %+v", h2)
		}
		// m1 confirms by reporting only what it kept, and moves to epoch 2.
		if h = e.beat("m1", 1, kept); h.Err != nil || h.MemberEpoch != 2 {
			t.Fatalf("m1 confirms %+v", h)
		}
		h2 := e.beat("m2", 2, Assignment{})
		if h2.Err != nil || h2.Assignment.count() != 2 || h2.Assignment.intersect(kept).count() != 0 {
			t.Fatalf("m2 after the release %+v", h2)
		}
		d, err := e.c.DescribeConsumerGroup("cg")
		if err != nil || d.State != "Stable" || d.Epoch != 2 || len(d.Members) != 2 || d.Assignor != AssignorUniform {
			t.Fatalf("describe %+v %v", d, err)
		}
		l, _ := e.c.List(nil, []string{"consumer"})
		if len(l) != 1 || l[0].State != "Stable" {
			t.Fatalf("list %+v", l)
		}

		// Commits and fetches are checked against member epochs.
		commit := func(member string, epoch int32, v9 bool) error {
			return e.c.CommitOffsets(CommitRequest{Group: "cg", MemberID: member, Generation: epoch, MemberEpochs: v9,
				Offsets: []CommitOffset{{TopicPartition{"t", 0}, offset(3, -1, "")}}})[0]
		}
		wantErr(t, "commit", commit("m1", 2, true), nil)
		wantErr(t, "stale commit", commit("m1", 1, true), ErrStaleMemberEpoch)
		wantErr(t, "old version", commit("m1", 2, false), ErrUnsupportedVersion)
		wantErr(t, "unknown member", commit("x", 2, true), ErrUnknownMemberID)
		wantErr(t, "admin commit to an active group", commit("", -1, true), ErrUnknownMemberID)
		_, err = e.c.FetchOffsetsAs("cg", "m1", 1, nil)
		wantErr(t, "stale fetch", err, ErrStaleMemberEpoch)
		o, err := e.c.FetchOffsetsAs("cg", "m1", 2, nil)
		if err != nil || o[TopicPartition{"t", 0}].Offset != 3 {
			t.Fatalf("fetch %v %v", o, err)
		}

		// Classic members cannot join it.
		wantErr(t, "classic join", got(t, e.joinAsync(joinReq("cg", ""))).Err, ErrInconsistentProtocol)

		// m2 leaves: m1 gets everything back.
		if r := e.beat("m2", -1, nil); r.Err != nil || r.MemberEpoch != -1 {
			t.Fatalf("leave %+v", r)
		}
		if h = e.beat("m1", 2, kept); h.Err != nil || h.MemberEpoch != 3 || h.Assignment.count() != 4 {
			t.Fatalf("m1 after m2 left %+v", h)
		}
	})
}

func TestConsumerGroupErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newConsumerEnv(t)
		wantErr(t, "no member id", e.join("", nil).Err, ErrInvalidRequest)
		wantErr(t, "owned partitions on join", e.join("m", func(r *ConsumerHeartbeatRequest) { r.Owned = Assignment{tid(1): {0}} }).Err, ErrInvalidRequest)
		wantErr(t, "no subscription", e.join("m", func(r *ConsumerHeartbeatRequest) { r.SubscribedTopics = nil }).Err, ErrInvalidRequest)
		wantErr(t, "unknown assignor", e.join("m", func(r *ConsumerHeartbeatRequest) { a := "fancy"; r.ServerAssignor = &a }).Err, ErrUnsupportedAssignor)
		wantErr(t, "unknown member", e.beat("ghost", 3, nil).Err, ErrUnknownMemberID)

		r := e.join("m", nil)
		wantErr(t, "future epoch", e.beat("m", r.MemberEpoch+1, nil).Err, ErrFencedMemberEpoch)
		e.join("n", nil)
		h := e.beat("m", 1, r.Assignment) // revoke half
		kept := h.Assignment
		if h = e.beat("m", 1, kept); h.MemberEpoch != 2 {
			t.Fatalf("m did not move to epoch 2: %+v", h)
		}
		// One epoch behind is accepted while owning a subset of the assignment.
		wantErr(t, "previous epoch, subset", e.beat("m", 1, kept).Err, nil)
		wantErr(t, "previous epoch, more partitions", e.beat("m", 1, r.Assignment).Err, ErrFencedMemberEpoch)
		wantErr(t, "previous epoch, owned unknown", e.beat("m", 1, nil).Err, ErrFencedMemberEpoch)

		// A classic group with members is not a consumer group.
		e.stableGroup("classic")
		res := e.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "classic", MemberID: "x", RebalanceTimeout: time.Second,
			SubscribedTopics: []string{"t"}, Owned: Assignment{}})
		wantErr(t, "heartbeat to a classic group", res.Err, ErrGroupNotFound)

		// v0: the coordinator names the member.
		gen := e.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "cg", RebalanceTimeout: time.Second,
			SubscribedTopics: []string{"t"}, Owned: Assignment{}, GenerateMemberID: true})
		if gen.Err != nil || gen.MemberID == "" {
			t.Fatalf("v0 join %+v", gen)
		}
	})
}

func TestConsumerGroupStaticMemberAndTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newConsumerEnv(t)
		inst := "i1"
		withInst := func(r *ConsumerHeartbeatRequest) { r.InstanceID = &inst }
		a := e.join("a1", withInst)
		if a.Err != nil || a.Assignment.count() != 4 {
			t.Fatalf("static join %+v", a)
		}
		wantErr(t, "instance in use", e.join("a2", withInst).Err, ErrUnreleasedInstanceID)
		if r := e.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "cg", MemberID: "a1", MemberEpoch: -2, InstanceID: &inst, RebalanceTimeout: -1}); r.Err != nil || r.MemberEpoch != -2 {
			t.Fatalf("static leave %+v", r)
		}
		b := e.join("a2", withInst) // the restart takes over the place and partitions
		if b.Err != nil || b.MemberEpoch != a.MemberEpoch || b.Assignment.count() != 4 {
			t.Fatalf("static rejoin %+v (before %+v)", b, a)
		}
		old := e.c.ConsumerHeartbeat(ConsumerHeartbeatRequest{Group: "cg", MemberID: "a1", MemberEpoch: a.MemberEpoch, InstanceID: &inst, RebalanceTimeout: -1})
		wantErr(t, "old incarnation", old.Err, ErrFencedInstanceID)

		// A second member; a2 must revoke but never confirms: it is fenced
		// after its rebalance timeout and the other member gets everything.
		c := e.join("c", nil)
		e.beat("a2", b.MemberEpoch, b.Assignment)
		advance(11 * time.Second)
		wantErr(t, "fenced member", e.beat("a2", b.MemberEpoch, nil).Err, ErrUnknownMemberID)
		h := e.beat("c", c.MemberEpoch, Assignment{})
		if h.Err != nil || h.Assignment.count() != 4 {
			t.Fatalf("remaining member %+v", h)
		}
		// Its session expires without heartbeats.
		advance(46 * time.Second)
		if l, _ := e.c.List(nil, nil); len(l) != 1 || l[0].State != "Empty" {
			t.Fatalf("after the session timeout %+v", l)
		}

		// New partitions move the target.
		d := e.join("d", nil)
		e.topics.set(TopicInfo{"t", tid(1), 6})
		h = e.beat("d", d.MemberEpoch, d.Assignment)
		if h.Err != nil || h.MemberEpoch <= d.MemberEpoch || h.Assignment.count() != 6 {
			t.Fatalf("after adding partitions %+v", h)
		}
	})
}
