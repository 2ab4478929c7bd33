package group

import (
	"testing"
	"testing/synctest"
)

// listed returns the group's ListGroups entry; ok false if it is not
// listed.
func (e *env) listed(name string) (Listing, bool) {
	e.t.Helper()
	all, err := e.c.List(nil, nil)
	if err != nil {
		e.t.Fatalf("list: %v", err)
	}
	for _, l := range all {
		if l.Group == name {
			return l, true
		}
	}
	return Listing{}, false
}

// An empty group takes the kind of its next member's protocol and keeps
// its offsets; the classic generation goes on across a consumer-protocol
// interlude, and the KIP-848 records are deleted when the group turns
// classic.
func TestGroupChangesKindWhenEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newConsumerEnv(t)
		j := e.stableGroup("cg")
		wantErr(t, "classic commit", e.c.CommitOffsets(CommitRequest{Group: "cg", MemberID: j.MemberID, Generation: j.Generation,
			Offsets: []CommitOffset{commit(tp0, offset(7, -1, ""))}})[0], nil)
		wantErr(t, "consumer join to a classic group with members", e.join("m1", nil).Err, ErrGroupNotFound)
		wantErr(t, "consumer heartbeat to a classic group with members", e.beat("m1", 1, nil).Err, ErrUnknownMemberID)
		if _, err := e.c.Leave("cg", []LeavingMember{{MemberID: j.MemberID}}); err != nil {
			t.Fatal(err)
		}
		if s := e.state("cg"); s != Empty {
			t.Fatalf("state %v after the last member left", s)
		}

		// Classic → consumer.
		r := e.join("m1", nil)
		if r.Err != nil || r.MemberEpoch != 1 {
			t.Fatalf("consumer join to the empty classic group %+v", r)
		}
		if l, _ := e.listed("cg"); l.Type != "consumer" || l.ProtocolType != "consumer" || l.State != "Stable" {
			t.Fatalf("listed %+v", l)
		}
		if o, _ := e.c.FetchOffsets("cg", nil); o[tp0].Offset != 7 {
			t.Fatalf("offsets after turning consumer %+v", o)
		}
		// Classic requests find no member of theirs in it.
		wantErr(t, "classic join", got(t, e.joinAsync(joinReq("cg", ""))).Err, ErrInconsistentProtocol)
		wantErr(t, "classic heartbeat", e.c.Heartbeat(HeartbeatRequest{Group: "cg", MemberID: j.MemberID, Generation: 2}), ErrUnknownMemberID)
		wantErr(t, "classic sync", got(t, e.syncAsync(SyncRequest{Group: "cg", MemberID: j.MemberID, Generation: 2})).Err, ErrUnknownMemberID)
		errs, err := e.c.Leave("cg", []LeavingMember{{MemberID: "m1"}})
		wantErr(t, "classic leave", err, nil)
		wantErr(t, "classic leave of a consumer member", errs[0], ErrUnknownMemberID)
		if d, err := e.c.Describe("cg"); err != nil || d.State != "Dead" || len(d.Members) != 0 {
			t.Fatalf("DescribeGroups of a consumer group %+v %v", d, err)
		}

		// Consumer → classic: the generation goes on from the classic one.
		if r := e.beat("m1", -1, nil); r.Err != nil {
			t.Fatalf("leave %+v", r)
		}
		j2 := got(t, e.joinNew("cg"))
		if j2.Err != nil || j2.Generation != j.Generation+2 {
			t.Fatalf("classic join to the empty consumer group %+v (first generation %d)", j2, j.Generation)
		}
		if l, _ := e.listed("cg"); l.Type != "classic" {
			t.Fatalf("listed %+v", l)
		}
		_, err = e.c.DescribeConsumerGroup("cg")
		wantErr(t, "ConsumerGroupDescribe of a classic group", err, ErrGroupNotFound)
		if o, _ := e.c.FetchOffsets("cg", nil); o[tp0].Offset != 7 {
			t.Fatalf("offsets after turning classic %+v", o)
		}

		// Emptied and reloaded, it is classic: the KIP-848 records are gone.
		if _, err := e.c.Leave("cg", []LeavingMember{{MemberID: j2.MemberID}}); err != nil {
			t.Fatal(err)
		}
		e.restart()
		if l, ok := e.listed("cg"); !ok || l.Type != "classic" || l.State != "Empty" {
			t.Fatalf("listed after restart %+v %v", l, ok)
		}
		_, err = e.c.DescribeConsumerGroup("cg")
		wantErr(t, "ConsumerGroupDescribe after restart", err, ErrGroupNotFound)
	})
}

// Deleting a consumer group that was classic deletes the classic group's
// metadata record too, so nothing comes back on reload.
func TestDeleteConsumerGroupThatWasClassic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newConsumerEnv(t)
		j := e.stableGroup("cg")
		if _, err := e.c.Leave("cg", []LeavingMember{{MemberID: j.MemberID}}); err != nil {
			t.Fatal(err)
		}
		if r := e.join("m1", nil); r.Err != nil {
			t.Fatalf("consumer join %+v", r)
		}
		wantErr(t, "delete a consumer group with members", e.c.DeleteGroup("cg"), ErrNonEmptyGroup)
		if r := e.beat("m1", -1, nil); r.Err != nil {
			t.Fatalf("leave %+v", r)
		}
		wantErr(t, "delete", e.c.DeleteGroup("cg"), nil)
		if _, ok := e.listed("cg"); ok {
			t.Fatal("deleted group still listed")
		}
		e.restart()
		if l, ok := e.listed("cg"); ok {
			t.Fatalf("deleted group came back after restart: %+v", l)
		}
	})
}
