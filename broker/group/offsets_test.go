package group

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/tier/record"
)

func offset(o int64, epoch int32, meta string) Offset {
	return Offset{Offset: o, LeaderEpoch: epoch, Metadata: meta, ExpireTimestamp: -1}
}

func commit(tp TopicPartition, o Offset) CommitOffset { return CommitOffset{tp, o} }

var (
	tp0 = TopicPartition{"t", 0}
	tp1 = TopicPartition{"t", 1}
	tpU = TopicPartition{"u", 0}
)

func TestSimpleCommitFetchAndReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		errs := e.c.CommitOffsets(CommitRequest{Group: "simple", Generation: -1, Offsets: []CommitOffset{
			commit(tp0, offset(10, 3, "meta-0")),
			commit(tp1, offset(20, -1, "")),
			commit(tpU, offset(30, 1, strings.Repeat("x", 65))), // over MaxMetadataBytes (64)
		}})
		wantErr(t, "commit tp0", errs[0], nil)
		wantErr(t, "commit tp1", errs[1], nil)
		wantErr(t, "commit oversized metadata", errs[2], ErrMetadataTooLarge)

		check := func(when string) {
			t.Helper()
			got, err := e.c.FetchOffsets("simple", nil)
			wantErr(t, when+": fetch", err, nil)
			if len(got) != 2 || got[tp0].Offset != 10 || got[tp0].LeaderEpoch != 3 || got[tp0].Metadata != "meta-0" ||
				got[tp1].Offset != 20 || got[tp1].LeaderEpoch != -1 {
				t.Fatalf("%s: fetched %+v", when, got)
			}
			some, _ := e.c.FetchOffsets("simple", []TopicPartition{tp1, tpU})
			if len(some) != 1 || some[tp1].Offset != 20 {
				t.Fatalf("%s: fetched subset %+v", when, some)
			}
		}
		check("before restart")
		e.restart()
		check("after restart")

		none, err := e.c.FetchOffsets("unknown", nil)
		if err != nil || len(none) != 0 {
			t.Fatalf("unknown group: %v %v", none, err)
		}
		// A generation for a group that does not exist.
		wantErr(t, "commit gen 3 to missing group", e.c.CommitOffsets(CommitRequest{Group: "missing", MemberID: "m", Generation: 3,
			Offsets: []CommitOffset{commit(tp0, offset(1, -1, ""))}})[0], ErrIllegalGeneration)
		wantErr(t, "commit gen 3 to missing group (v9+)", e.c.CommitOffsets(CommitRequest{Group: "missing", MemberID: "m", Generation: 3, MemberEpochs: true,
			Offsets: []CommitOffset{commit(tp0, offset(1, -1, ""))}})[0], ErrGroupNotFound)
	})
}

func TestCommitsReuseBuffersIntact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		// Commits of shrinking and growing size, to several groups, reuse the
		// pooled record buffers: each must still be written as committed.
		groups := []string{"a-long-group-name", "b", "a-long-group-name", "c"}
		for i, g := range groups {
			var offs []CommitOffset
			for p := range int32(4 - i%3) {
				offs = append(offs, commit(TopicPartition{"t", p}, offset(int64(100*i)+int64(p), int32(i), strings.Repeat("m", 10*(i%2)))))
			}
			for _, err := range e.c.CommitOffsets(CommitRequest{Group: g, Generation: -1, Offsets: offs}) {
				wantErr(t, "commit to "+g, err, nil)
			}
		}
		check := func(when string) {
			t.Helper()
			want := map[string]map[TopicPartition]Offset{}
			for i, g := range groups {
				if want[g] == nil {
					want[g] = map[TopicPartition]Offset{}
				}
				for p := range int32(4 - i%3) {
					want[g][TopicPartition{"t", p}] = offset(int64(100*i)+int64(p), int32(i), strings.Repeat("m", 10*(i%2)))
				}
			}
			for g, w := range want {
				got, err := e.c.FetchOffsets(g, nil)
				wantErr(t, when+": fetch "+g, err, nil)
				if len(got) != len(w) {
					t.Fatalf("%s: %s fetched %+v, want %+v", when, g, got, w)
				}
				for tp, o := range w {
					if have := got[tp]; have.Offset != o.Offset || have.LeaderEpoch != o.LeaderEpoch || have.Metadata != o.Metadata {
						t.Fatalf("%s: %s %s-%d = %+v, want %+v", when, g, tp.Topic, tp.Partition, have, o)
					}
				}
			}
		}
		check("before restart")
		e.restart()
		check("after restart")
	})
}

func TestGroupCommitsAndRestoreAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		j := e.stableGroup("g")
		wantErr(t, "simple commit to an active group", e.c.CommitOffsets(CommitRequest{Group: "g", Generation: -1,
			Offsets: []CommitOffset{commit(tp0, offset(1, -1, ""))}})[0], ErrUnknownMemberID)
		wantErr(t, "wrong generation", e.c.CommitOffsets(CommitRequest{Group: "g", MemberID: j.MemberID, Generation: 9,
			Offsets: []CommitOffset{commit(tp0, offset(1, -1, ""))}})[0], ErrIllegalGeneration)
		wantErr(t, "unknown member", e.c.CommitOffsets(CommitRequest{Group: "g", MemberID: "who", Generation: 1,
			Offsets: []CommitOffset{commit(tp0, offset(1, -1, ""))}})[0], ErrUnknownMemberID)
		wantErr(t, "member commit", e.c.CommitOffsets(CommitRequest{Group: "g", MemberID: j.MemberID, Generation: 1,
			Offsets: []CommitOffset{commit(tp0, offset(42, 7, "m"))}})[0], nil)

		e.restart()
		// The Stable group, its member and generation come back: the member
		// keeps heartbeating without a rebalance.
		if s := e.state("g"); s != Stable {
			t.Fatalf("state after restart %v", s)
		}
		wantErr(t, "heartbeat after restart", e.c.Heartbeat(HeartbeatRequest{Group: "g", MemberID: j.MemberID, Generation: 1}), nil)
		s := got(t, e.syncAsync(SyncRequest{Group: "g", MemberID: j.MemberID, Generation: 1}))
		if s.Err != nil || string(s.Assignment) != "assign-"+j.MemberID {
			t.Fatalf("sync after restart %+v", s)
		}
		o, _ := e.c.FetchOffsets("g", []TopicPartition{tp0})
		if o[tp0].Offset != 42 || o[tp0].LeaderEpoch != 7 || o[tp0].Metadata != "m" {
			t.Fatalf("offset after restart %+v", o)
		}
		// The member's session restarts at load and expires without heartbeats.
		advance(11 * time.Second)
		if st := e.state("g"); st != Empty {
			t.Fatalf("state %v, want Empty after the restored member expired", st)
		}
	})
}

func TestOffsetRetention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		j := e.stableGroup("g")
		e.c.CommitOffsets(CommitRequest{Group: "g", MemberID: j.MemberID, Generation: 1,
			Offsets: []CommitOffset{commit(tp0, offset(5, -1, ""))}})
		e.c.CommitOffsets(CommitRequest{Group: "s", Generation: -1, Offsets: []CommitOffset{commit(tp0, offset(6, -1, ""))}})
		// An active group keeps its offsets however old they are, as long as
		// it subscribes to their topics (the member metadata does not parse as
		// a consumer subscription here, so nothing is known to be unsubscribed).
		advance(5 * time.Second)
		if n := e.c.ExpireOffsets(); n != 0 {
			t.Fatalf("expired %d offsets too early", n)
		}
		errs, err := e.c.Leave("g", []LeavingMember{{MemberID: j.MemberID}})
		if err != nil || errs[0] != nil {
			t.Fatalf("leave: %v %v", err, errs)
		}
		if s := e.state("g"); s != Empty {
			t.Fatalf("state %v", s)
		}
		advance(time.Hour - 3*time.Second) // 1h+2s after the commits, 1h-3s after g emptied
		if n := e.c.ExpireOffsets(); n != 1 {
			t.Fatalf("expired %d, want 1 (the simple group's)", n)
		}
		advance(10 * time.Second)
		if n := e.c.ExpireOffsets(); n != 1 {
			t.Fatalf("expired %d, want 1 (an hour after g emptied)", n)
		}
		for _, g := range []string{"g", "s"} {
			if s := e.state(g); s != Dead {
				t.Fatalf("group %s is %v, want removed", g, s)
			}
		}
		e.restart()
		if s := e.state("g"); s != Dead {
			t.Fatalf("group came back after restart: %v", s)
		}
		if o, _ := e.c.FetchOffsets("s", nil); len(o) != 0 {
			t.Fatalf("expired offsets came back: %+v", o)
		}
	})
}

func TestExplicitRetentionTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		now := time.Now().UnixMilli()
		o := offset(1, -1, "")
		o.CommitTimestamp, o.ExpireTimestamp = now, now+int64(time.Minute/time.Millisecond)
		e.c.CommitOffsets(CommitRequest{Group: "s", Generation: -1, Offsets: []CommitOffset{commit(tp0, o)}})
		e.restart()
		advance(2 * time.Minute)
		if n := e.c.ExpireOffsets(); n != 1 {
			t.Fatalf("expired %d, want the offset with its own expire time", n)
		}
	})
}

func TestDeleteGroupAndOffsets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		var sub kmsg.ConsumerMemberMetadata
		sub.Topics = []string{"t"}
		req := joinReq("g", "")
		req.Protocols = []Protocol{{Name: "range", Metadata: sub.AppendTo(nil)}}
		first := got(t, e.joinAsync(req))
		req.MemberID = first.MemberID
		j := got(t, e.joinAsync(req))
		got(t, e.syncAsync(SyncRequest{Group: "g", MemberID: j.MemberID, Generation: j.Generation}))
		e.c.CommitOffsets(CommitRequest{Group: "g", MemberID: j.MemberID, Generation: j.Generation,
			Offsets: []CommitOffset{commit(tp0, offset(1, -1, "")), commit(tpU, offset(2, -1, ""))}})

		wantErr(t, "delete active group", e.c.DeleteGroup("g"), ErrNonEmptyGroup)
		wantErr(t, "delete unknown group", e.c.DeleteGroup("nope"), ErrGroupNotFound)
		_, err := e.c.DeleteOffsets("nope", []TopicPartition{tp0})
		wantErr(t, "delete offsets of unknown group", err, ErrGroupNotFound)
		errs, err := e.c.DeleteOffsets("g", []TopicPartition{tp0, tpU})
		wantErr(t, "delete offsets", err, nil)
		wantErr(t, "subscribed topic", errs[0], ErrSubscribedToTopic)
		wantErr(t, "unsubscribed topic", errs[1], nil)
		if o, _ := e.c.FetchOffsets("g", nil); len(o) != 1 {
			t.Fatalf("offsets after delete %+v", o)
		}

		e.c.Leave("g", []LeavingMember{{MemberID: j.MemberID}})
		wantErr(t, "delete empty group", e.c.DeleteGroup("g"), nil)
		if s := e.state("g"); s != Dead {
			t.Fatalf("state %v after delete", s)
		}
		e.restart()
		if s := e.state("g"); s != Dead {
			t.Fatalf("deleted group came back: %v", s)
		}
	})
}

func TestAppendFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		j := got(t, e.joinNew("g"))
		e.log.SetFail(true)
		wantErr(t, "commit", e.c.CommitOffsets(CommitRequest{Group: "s", Generation: -1,
			Offsets: []CommitOffset{commit(tp0, offset(1, -1, ""))}})[0], ErrCoordinatorNotAvailable)
		s := got(t, e.syncAsync(SyncRequest{Group: "g", MemberID: j.MemberID, Generation: j.Generation}))
		wantErr(t, "leader sync", s.Err, ErrCoordinatorNotAvailable)
		if st := e.state("g"); st != PreparingRebalance {
			t.Fatalf("state %v after a failed assignment write", st)
		}
		e.log.SetFail(false)
		if o, _ := e.c.FetchOffsets("s", nil); len(o) != 0 {
			t.Fatalf("failed commit visible: %+v", o)
		}
	})
}

func TestDescribeAndList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		j := e.stableGroup("a")
		e.c.CommitOffsets(CommitRequest{Group: "b", Generation: -1, Offsets: []CommitOffset{commit(tp0, offset(1, -1, ""))}})
		d, err := e.c.Describe("a")
		if err != nil || d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 1 ||
			d.Members[0].MemberID != j.MemberID || string(d.Members[0].Assignment) != "assign-"+j.MemberID || string(d.Members[0].Metadata) != "meta" {
			t.Fatalf("describe %+v %v", d, err)
		}
		all, err := e.c.List(nil, nil)
		if err != nil || len(all) != 2 || all[0].Group != "a" || all[1].Group != "b" || all[1].State != "Empty" || all[0].Type != "classic" {
			t.Fatalf("list %+v %v", all, err)
		}
		stable, _ := e.c.List([]string{"stable"}, nil)
		if len(stable) != 1 || stable[0].Group != "a" {
			t.Fatalf("list stable %+v", stable)
		}
		if none, _ := e.c.List(nil, []string{"consumer"}); len(none) != 0 {
			t.Fatalf("list consumer-type groups %+v", none)
		}
	})
}

// TestOffsetRecordSize checks that offsetRecordSize bounds what
// offsetRecord appends (so a commit's records share one allocation) and
// that records sharing a buffer decode to what was committed.
func TestOffsetRecordSize(t *testing.T) {
	offs := []*Offset{
		{Offset: 1, LeaderEpoch: 2, Metadata: "m", CommitTimestamp: 3, ExpireTimestamp: -1},
		{Offset: 4, LeaderEpoch: -1, Metadata: strings.Repeat("x", 40), CommitTimestamp: 5, ExpireTimestamp: 6},
		nil,
	}
	size := 0
	for i, o := range offs {
		size += offsetRecordSize("group", TopicPartition{"topic", int32(i)}, o)
	}
	buf := make([]byte, 0, size)
	start := &buf[:1][0]
	var recs []*kmsg.OffsetCommitValue
	for i, o := range offs {
		var r record.Record
		buf, r = offsetRecord(buf, "group", TopicPartition{"topic", int32(i)}, o)
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil || k.Group != "group" || k.Topic != "topic" || k.Partition != int32(i) {
			t.Fatalf("record %d: key %+v, %v", i, k, err)
		}
		if o == nil {
			if r.Value != nil {
				t.Fatalf("tombstone %d has a value", i)
			}
			continue
		}
		v := new(kmsg.OffsetCommitValue)
		if err := v.ReadFrom(r.Value); err != nil || v.Offset != o.Offset || v.Metadata != o.Metadata || v.CommitTimestamp != o.CommitTimestamp {
			t.Fatalf("record %d: value %+v, %v", i, v, err)
		}
		recs = append(recs, v)
	}
	if len(buf) > size || &buf[:1][0] != start {
		t.Fatalf("records took %d bytes, bound %d (reallocated: %v)", len(buf), size, &buf[:1][0] != start)
	}
	if recs[1].Version != offsetValueExpire || recs[1].ExpireTimestamp != 6 || recs[0].LeaderEpoch != 2 {
		t.Fatalf("values %+v %+v", recs[0], recs[1])
	}
}

// TestOffsetMetadataMaxBytes checks that the broker key
// offset.metadata.max.bytes bounds a commit's metadata: one byte over is
// OFFSET_METADATA_TOO_LARGE, the limit itself commits.
func TestOffsetMetadataMaxBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := config.Parse(map[string]string{"offset.metadata.max.bytes": "10"})
		if err != nil {
			t.Fatal(err)
		}
		if cfg := ConfigFrom(config.Default()); cfg.MaxMetadataBytes != 4096 {
			t.Fatalf("default offset.metadata.max.bytes %d, want Kafka's 4096", cfg.MaxMetadataBytes)
		}
		e := newEnv(t, func(c *Config) { c.MaxMetadataBytes = ConfigFrom(b).MaxMetadataBytes })
		errs := e.c.CommitOffsets(CommitRequest{Group: "g", Generation: -1, Offsets: []CommitOffset{
			commit(tp0, offset(1, -1, strings.Repeat("m", 11))),
			commit(tp1, offset(2, -1, strings.Repeat("m", 10))),
		}})
		wantErr(t, "metadata over the limit", errs[0], ErrMetadataTooLarge)
		wantErr(t, "metadata at the limit", errs[1], nil)
		got, _ := e.c.FetchOffsets("g", nil)
		if _, ok := got[tp0]; ok || got[tp1].Offset != 2 {
			t.Fatalf("fetched %+v, want only the offset within the limit", got)
		}
	})
}
