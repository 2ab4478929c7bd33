package e2e

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-broker/strata/test/harness"
)

// joinRaw sends one JoinGroup of the consumer protocol type.
func joinRaw(t *testing.T, cl *kgo.Client, group, member string, instance *string, session int32, meta []byte) *kmsg.JoinGroupResponse {
	t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.InstanceID = group, member, instance
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = session, 5000
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta
	req.Protocols = append(req.Protocols, p)
	resp, err := req.RequestWith(groupCtx(t), cl)
	if err != nil {
		t.Fatalf("join group %q: %v", group, err)
	}
	return resp
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	var code int16
	if want != nil {
		code = want.Code
	}
	if got != code {
		t.Errorf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// TestGroupBadInput checks Kafka's error codes for malformed or stale
// group requests, with raw requests (offset.metadata.max.bytes at 64).
func TestGroupBadInput(t *testing.T) {
	overrides := maps.Clone(groupOverrides)
	overrides["offset.metadata.max.bytes"] = "64"
	b := harness.Start(t, overrides)
	adm := b.Admin()
	harness.CreateTopic(t, adm, "bad", 2, nil)
	cl := b.Client()
	ctx := groupCtx(t)

	// Member id required (v4+), then a join with the id; garbage protocol
	// metadata is relayed untouched.
	r := joinRaw(t, cl, "bad-group", "", nil, 6000, []byte{0xff, 0xfe})
	wantCode(t, "join without member id", r.ErrorCode, kerr.MemberIDRequired)
	if r.MemberID == "" {
		t.Fatal("MEMBER_ID_REQUIRED without a member id")
	}
	id := r.MemberID
	wantCode(t, "session timeout below the minimum", joinRaw(t, cl, "bad-group", id, nil, 100, nil).ErrorCode, kerr.InvalidSessionTimeout)
	r = joinRaw(t, cl, "bad-group", id, nil, 6000, []byte{0xff, 0xfe})
	wantCode(t, "join with the id", r.ErrorCode, nil)
	if r.Generation != 1 || r.LeaderID != id || len(r.Members) != 1 || !slices.Equal(r.Members[0].ProtocolMetadata, []byte{0xff, 0xfe}) {
		t.Fatalf("join response %+v", r)
	}
	wantCode(t, "join with an empty group id", joinRaw(t, cl, "", "", nil, 6000, nil).ErrorCode, kerr.InvalidGroupID)
	wantCode(t, "join with an unknown member id", joinRaw(t, cl, "bad-group", "stranger", nil, 6000, nil).ErrorCode, kerr.UnknownMemberID)

	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "bad-group", id, 7
	sr, err := sync.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "sync with a wrong generation", sr.ErrorCode, kerr.IllegalGeneration)
	sync.Generation = 1
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = id, []byte("opaque")
	sync.GroupAssignment = append(sync.GroupAssignment, a)
	if sr, err = sync.RequestWith(ctx, cl); err != nil || sr.ErrorCode != 0 || string(sr.MemberAssignment) != "opaque" {
		t.Fatalf("sync: %+v %v", sr, err)
	}

	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "bad-group", id, 0
	hr, err := hb.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "heartbeat with a wrong generation", hr.ErrorCode, kerr.IllegalGeneration)
	hb.Group = "no-such-group"
	hr, _ = hb.RequestWith(ctx, cl)
	wantCode(t, "heartbeat to an unknown group", hr.ErrorCode, kerr.UnknownMemberID)

	commit := func(group, member string, gen int32, topic string, meta string) int16 {
		t.Helper()
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = group, member, gen
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset, rp.Metadata = 1, &meta
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("offset commit: %v", err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	// kgo sends OffsetCommit v9, where Kafka answers a missing group
	// GROUP_ID_NOT_FOUND (ILLEGAL_GENERATION before v9).
	wantCode(t, "commit with a generation to a missing group", commit("missing", "m", 3, "bad", ""), kerr.GroupIDNotFound)
	wantCode(t, "commit from an unknown member", commit("bad-group", "stranger", 1, "bad", ""), kerr.UnknownMemberID)
	wantCode(t, "commit with a wrong generation", commit("bad-group", id, 2, "bad", ""), kerr.IllegalGeneration)
	wantCode(t, "commit of an unknown topic", commit("bad-group", id, 1, "no-such-topic", ""), kerr.UnknownTopicOrPartition)
	wantCode(t, "commit with metadata over offset.metadata.max.bytes", commit("bad-group", id, 1, "bad", strings.Repeat("m", 65)), kerr.OffsetMetadataTooLarge)
	wantCode(t, "commit with metadata at offset.metadata.max.bytes", commit("bad-group", id, 1, "bad", strings.Repeat("m", 64)), nil)
	wantCode(t, "simple commit to an active group", commit("bad-group", "", -1, "bad", ""), kerr.UnknownMemberID)
	wantCode(t, "member commit", commit("bad-group", id, 1, "bad", "ok"), nil)

	// Static membership: a second incarnation fences the first.
	inst := "inst"
	s1 := joinRaw(t, cl, "static-bad", "", &inst, 6000, nil)
	wantCode(t, "static join", s1.ErrorCode, nil)
	s2 := joinRaw(t, cl, "static-bad", "", &inst, 6000, nil)
	wantCode(t, "static rejoin", s2.ErrorCode, nil)
	hb = kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.InstanceID, hb.Generation = "static-bad", s1.MemberID, &inst, s2.Generation
	hr, _ = hb.RequestWith(ctx, cl)
	wantCode(t, "heartbeat of a fenced static member", hr.ErrorCode, kerr.FencedInstanceID)

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "static-bad"
	other := "unknown-instance"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.InstanceID = &other
	leave.Members = append(leave.Members, lm)
	lr, err := leave.RequestWith(ctx, cl)
	if err != nil || len(lr.Members) != 1 {
		t.Fatalf("leave: %+v %v", lr, err)
	}
	wantCode(t, "leave of an unknown instance", lr.Members[0].ErrorCode, kerr.UnknownMemberID)

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"no-such-group", "bad-group"}
	dr, err := del.RequestWith(ctx, cl)
	if err != nil || len(dr.Groups) != 2 {
		t.Fatalf("delete groups: %+v %v", dr, err)
	}
	for _, g := range dr.Groups {
		want := map[string]*kerr.Error{"no-such-group": kerr.GroupIDNotFound, "bad-group": kerr.NonEmptyGroup}[g.Group]
		wantCode(t, "delete "+g.Group, g.ErrorCode, want)
	}
	ds, err := adm.DescribeGroups(ctx, "no-such-group")
	if err != nil || ds["no-such-group"].State != "Dead" {
		t.Errorf("describe an unknown group: %+v %v", ds, err)
	}

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType = 1
	fc.CoordinatorKeys = []string{"txn"}
	fr, err := fc.RequestWith(ctx, cl)
	if err != nil || len(fr.Coordinators) != 1 {
		t.Fatalf("find transaction coordinator: %+v %v", fr, err)
	}
	if c := fr.Coordinators[0]; c.ErrorCode != 0 || c.NodeID < 0 {
		t.Errorf("transaction coordinator: %+v, want this broker", c)
	}
}

// TestGroupOldVersions pins old versions of the group APIs (v0 joins and
// commits, v1 offset fetches, v0 leaves) and the batched v8 OffsetFetch.
func TestGroupOldVersions(t *testing.T) {
	b := harness.Start(t, groupOverrides)
	harness.CreateTopic(t, b.Admin(), "old", 1, nil)
	ctx := groupCtx(t)
	v := kversion.V0_10_0()
	old := b.Client(kgo.MaxVersions(v))

	r := joinRaw(t, old, "old-group", "", nil, 6000, nil) // v0: no member-id round trip
	wantCode(t, "v0 join", r.ErrorCode, nil)
	if r.MemberID == "" || r.Generation != 1 {
		t.Fatalf("v0 join %+v", r)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "old-group", r.MemberID, r.Generation
	if sr, err := sync.RequestWith(ctx, old); err != nil || sr.ErrorCode != 0 {
		t.Fatalf("v0 sync: %+v %v", sr, err)
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = "old-group", r.MemberID, r.Generation
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "old"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset, rp.Metadata = 7, kmsg.StringPtr("v2-commit")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	cr, err := req.RequestWith(ctx, old)
	if err != nil || cr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("old commit: %+v %v", cr, err)
	}

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = "old-group"
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "old", []int32{0, 5}
	fetch.Topics = append(fetch.Topics, ft)
	fr, err := fetch.RequestWith(ctx, old)
	if err != nil || len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 2 {
		t.Fatalf("old offset fetch: %+v %v", fr, err)
	}
	for _, p := range fr.Topics[0].Partitions {
		want := map[int32]int64{0: 7, 5: -1}[p.Partition]
		if p.Offset != want || p.ErrorCode != 0 {
			t.Errorf("old fetch partition %d: offset %d code %d, want %d", p.Partition, p.Offset, p.ErrorCode, want)
		}
	}

	// Batched OffsetFetch (v8+) over two groups, one of them unknown.
	bf := kmsg.NewPtrOffsetFetchRequest()
	for _, g := range []string{"old-group", "never-committed"} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		bf.Groups = append(bf.Groups, rg) // null topics: everything committed
	}
	bfr, err := bf.RequestWith(ctx, b.Client())
	if err != nil || len(bfr.Groups) != 2 {
		t.Fatalf("batched offset fetch: %+v %v", bfr, err)
	}
	for _, g := range bfr.Groups {
		n := 0
		for _, tp := range g.Topics {
			n += len(tp.Partitions)
		}
		if want := map[string]int{"old-group": 1, "never-committed": 0}[g.Group]; g.ErrorCode != 0 || n != want {
			t.Errorf("batched fetch of %s: code %d, %d offsets, want %d", g.Group, g.ErrorCode, n, want)
		}
	}

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group, leave.MemberID = "old-group", r.MemberID
	lr, err := leave.RequestWith(ctx, old)
	if err != nil || lr.ErrorCode != 0 {
		t.Fatalf("v0 leave: %+v %v", lr, err)
	}
	lr, _ = leave.RequestWith(ctx, old)
	wantCode(t, "second v0 leave", lr.ErrorCode, kerr.UnknownMemberID)
}
