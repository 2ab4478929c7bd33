package handler

import (
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
)

// Tables of transactional offset commits: TxnOffsetCommit, and
// OffsetFetch with RequireStable. The transaction is producer txnPID's at
// txnEpoch; its markers are WriteTxnMarkers to the group's partition of
// __consumer_offsets, as the transaction coordinator sends them.

// txnCommitReq commits committed(p) for partitions of t in the
// transaction, as member m (nil: no member, generation -1).
func txnCommitReq(s *scene, m *groupMember, partitions ...int32) *kmsg.TxnOffsetCommitRequest {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", s.group, txnPID, txnEpoch
	req.Generation = -1
	if m != nil {
		req.MemberID, req.Generation, req.InstanceID = m.id, m.gen, m.instance
	}
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	for _, p := range partitions {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		off, epoch, meta := committed(p)
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, off, epoch, kmsg.StringPtr(meta)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// txnCommitAs is a row's TxnOffsetCommit of t-0 and t-1 as member i (-1:
// none), changed by mod.
func txnCommitAs(i int, mod func(*kmsg.TxnOffsetCommitRequest)) func(*testing.T, *scene) kmsg.Request {
	return func(_ *testing.T, s *scene) kmsg.Request {
		var m *groupMember
		if i >= 0 {
			m = s.members[i]
		}
		req := txnCommitReq(s, m, 0, 1)
		if mod != nil {
			mod(req)
		}
		return req
	}
}

// withTxnOffsets commits t-0 and t-1 in the transaction (no member).
func withTxnOffsets(t *testing.T, s *scene) {
	t.Helper()
	withPartitions(2)(t, s)
	wantCodes(t, errorCodes(s.send(t, txnCommitReq(s, nil, 0, 1), 3)), nil)
}

// groupMarker writes the transaction's COMMIT or ABORT marker to the
// group's partition of __consumer_offsets.
func groupMarker(commit bool) step {
	return func(t *testing.T, s *scene) {
		t.Helper()
		offsets, ok := s.env.Cache.Topic(group.TopicName)
		if !ok {
			t.Fatalf("%s does not exist", group.TopicName)
		}
		idx := group.PartitionFor(s.group, int32(len(offsets.Partitions)))
		wantCodes(t, errorCodes(s.do(t, markersReq(commit, txnEpoch, 0, group.TopicName, idx))), nil)
	}
}

// wantStable checks what a RequireStable fetch of t-0 and t-1 answers:
// UNSTABLE_OFFSET_COMMIT for both, or no error.
func wantStable(unstable bool) step {
	return func(t *testing.T, s *scene) {
		t.Helper()
		req := offsetFetchReq([]string{s.group}, map[string][]int32{"t": {0, 1}})
		req.RequireStable = true
		code := int16(0)
		if unstable {
			code = kerr.UnstableOffsetCommit.Code
		}
		wantCodes(t, fetchCodes(s.send(t, req, 9).(*kmsg.OffsetFetchResponse)), []int16{0, code, code})
	}
}

// after runs steps once the answer is checked, on the row's scene.
func after(ss ...step) check[*kmsg.TxnOffsetCommitResponse] {
	return func(t *testing.T, s *scene, _ *kmsg.TxnOffsetCommitResponse) {
		t.Helper()
		steps(ss...)(t, s)
	}
}

func TestTxnOffsetCommit(t *testing.T) {
	topic := withPartitions(2)
	both := []int16{0, 0}
	// visible checks t-0 and t-1 hold their commits once the COMMIT
	// marker lands; leader epochs are kept from v2 on.
	visible := func(t *testing.T, s *scene, r *kmsg.TxnOffsetCommitResponse) {
		t.Helper()
		after(groupMarker(true), wantStable(false), wantCommitted(r.Version >= 2, 0, 1))(t, s, r)
	}
	rows := []apiRow[*kmsg.TxnOffsetCommitResponse]{
		{name: "pending offsets are invisible", setup: topic, req: txnCommitAs(-1, nil), codes: both, want: after(wantCommitted(false), wantStable(true))},
		{name: "commit marker makes them visible", setup: topic, req: txnCommitAs(-1, nil), codes: both, want: visible},
		{name: "abort marker drops them", setup: topic, req: txnCommitAs(-1, nil), codes: both, want: after(groupMarker(false), wantStable(false), wantCommitted(false))},
		{
			name: "a later offset commit wins", setup: topic, req: txnCommitAs(-1, nil), codes: both,
			want: after(func(t *testing.T, s *scene) {
				req := commitReq(s.group, nil, "t", 0)
				req.Topics[0].Partitions[0].Offset = 99
				wantCodes(t, errorCodes(s.send(t, req, 9)), nil)
			}, groupMarker(true), func(t *testing.T, s *scene) {
				if o0, o1 := s.fetchOffset(t, "t", 0).Offset, s.fetchOffset(t, "t", 1).Offset; o0 != 99 || o1 != 11 {
					t.Fatalf("offsets %d and %d, want 99 (the later commit) and 11", o0, o1)
				}
			}),
		},
		{name: "member at its generation", since: 3, setup: steps(topic, stable(1)), req: txnCommitAs(0, nil), codes: both, want: visible},
		{name: "while awaiting the assignment", since: 3, setup: steps(topic, awaitingSync(1)), req: txnCommitAs(0, nil), codes: both, want: visible},
		{
			name: "fenced generation", since: 3, setup: steps(topic, stable(1)),
			req:   txnCommitAs(0, func(r *kmsg.TxnOffsetCommitRequest) { r.Generation-- }),
			codes: []int16{codeIllegalGeneration, codeIllegalGeneration}, want: after(wantStable(false)),
		},
		{
			name: "unknown member", since: 3, setup: steps(topic, stable(1)),
			req:   txnCommitAs(0, func(r *kmsg.TxnOffsetCommitRequest) { r.MemberID = "nobody" }),
			codes: []int16{codeUnknownMember, codeUnknownMember},
		},
		{
			name: "KIP-848 member at a stale epoch", since: 3, setup: consumerGroup(1),
			req:   txnCommitAs(0, func(r *kmsg.TxnOffsetCommitRequest) { r.Generation-- }),
			codes: []int16{codeIllegalGeneration, codeIllegalGeneration},
		},
		{name: "KIP-848 member at its epoch", since: 3, setup: consumerGroup(1), req: txnCommitAs(0, nil), codes: both, want: visible},
		{
			name: "older producer epoch", setup: withTxnOffsets,
			req:   txnCommitAs(-1, func(r *kmsg.TxnOffsetCommitRequest) { r.ProducerEpoch-- }),
			codes: []int16{kerr.InvalidProducerEpoch.Code, kerr.InvalidProducerEpoch.Code},
		},
		{
			name: "unknown topic", setup: topic,
			req:   txnCommitAs(-1, func(r *kmsg.TxnOffsetCommitRequest) { r.Topics[0].Topic = "nope" }),
			codes: []int16{codeUnknownTopic, codeUnknownTopic},
		},
		{name: "not coordinator", scene: twoBrokers, setup: steps(topic, coordinatedElsewhere), req: txnCommitAs(-1, nil), codes: []int16{codeNotCoordinator, codeNotCoordinator}},
	}
	// The rows above commit for a producer no transaction coordinator
	// knows: without verification, up to v4, nothing asks it. From v5 on
	// the group's partition is added to the producer's transaction first
	// (txnOffsetCommitCoordinatedRows).
	for i := range rows {
		if rows[i].versions == nil {
			rows[i].versions = slices.Compact([]int16{rows[i].since, 4})
		}
		rows[i].scene = unverified(rows[i].scene)
	}
	runRows(t, tableOpts{groups: true, codes: errorCodes}, append(rows, txnOffsetCommitCoordinatedRows()...))
}

// unverified is o without transaction.partition.verification.enable.
func unverified(o sceneOpts) sceneOpts {
	o.config = maps.Clone(o.config)
	if o.config == nil {
		o.config = map[string]string{}
	}
	o.config["transaction.partition.verification.enable"] = "false"
	return o
}

// txnOffsetCommitCoordinatedRows: the transaction coordinator is asked
// about the group's partition of __consumer_offsets: TxnOffsetCommit v5
// (transaction version 2) adds it to the transaction itself, older
// versions verify AddOffsetsToTxn added it (KIP-890 part 1).
func txnOffsetCommitCoordinatedRows() []apiRow[*kmsg.TxnOffsetCommitResponse] {
	ready := steps(withPartitions(2), withTxnCoordinator)
	// commit initialises "tx" unless unknown, and commits t-0 and t-1 in
	// its transaction with the producer changed by mod.
	commit := func(unknown bool, mod func(*kmsg.TxnOffsetCommitRequest)) func(*testing.T, *scene) kmsg.Request {
		return func(t *testing.T, s *scene) kmsg.Request {
			req := txnCommitReq(s, nil, 0, 1)
			if !unknown {
				req.ProducerID, req.ProducerEpoch = initTxn(t, s, "tx")
			}
			if mod != nil {
				mod(req)
			}
			return req
		}
	}
	// withOffsetsAdded adds the group to the transaction
	// (AddOffsetsToTxn), as a version 0-1 client does before it commits.
	withOffsetsAdded := func(t *testing.T, s *scene) kmsg.Request {
		req := commit(false, nil)(t, s).(*kmsg.TxnOffsetCommitRequest)
		add := kmsg.NewPtrAddOffsetsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = "tx", req.ProducerID, req.ProducerEpoch, s.group
		if c := s.send(t, add, 3).(*kmsg.AddOffsetsToTxnResponse).ErrorCode; c != 0 {
			t.Fatalf("add offsets: %v", kerr.ErrorForCode(c))
		}
		return req
	}
	v5 := []int16{5}
	refused := func(code int16) []int16 { return []int16{code, code} }
	return []apiRow[*kmsg.TxnOffsetCommitResponse]{
		{
			// KIP-890 part 1: a hanging transaction in the group's
			// partition is refused; v4 clients know TRANSACTION_ABORTABLE.
			name: "the group's partition never added", versions: []int16{0, 3}, scene: txnScene, setup: ready,
			req: commit(false, nil), codes: refused(kerr.InvalidTxnState.Code), want: after(wantStable(false)),
		},
		{
			name: "the group's partition never added", versions: []int16{4}, scene: txnScene, setup: ready,
			req: commit(false, nil), codes: refused(kerr.TransactionAbortable.Code), want: after(wantStable(false)),
		},
		{
			name: "the group's partition added by AddOffsetsToTxn", versions: []int16{0, 4}, scene: txnScene, setup: ready,
			req: withOffsetsAdded, codes: []int16{0, 0}, want: after(wantStable(true)),
		},
		{
			name: "verification disabled", versions: []int16{0, 4}, scene: unverified(txnScene), setup: ready,
			req: commit(false, nil), codes: []int16{0, 0}, want: after(wantStable(true)),
		},
		{
			name: "v5 adds the group's partition to the transaction", versions: v5, scene: txnScene, setup: ready,
			req: commit(false, nil), codes: []int16{0, 0},
			want: after(wantStable(true), func(t *testing.T, s *scene) {
				d, err := s.env.Txn.Describe("tx")
				if err != nil || d.State.String() != "Ongoing" || len(d.Partitions) != 1 || d.Partitions[0].Topic != group.TopicName {
					t.Fatalf("described %+v, %v; want Ongoing over the group's %s partition", d, err, group.TopicName)
				}
			}),
		},
		{
			// Kafka's answer for a transactional id without InitProducerId.
			name: "v5 of an unknown transactional id", versions: v5, scene: txnScene, setup: ready,
			req: commit(true, nil), codes: refused(kerr.InvalidProducerIDMapping.Code), want: after(wantStable(false)),
		},
		{
			// AddPartitionsToTxnManager's PRODUCER_FENCED → INVALID_PRODUCER_EPOCH.
			name: "v5 of a fenced producer", versions: v5, scene: txnScene, setup: ready,
			req:   commit(false, func(r *kmsg.TxnOffsetCommitRequest) { r.ProducerEpoch-- }),
			codes: refused(kerr.InvalidProducerEpoch.Code), want: after(wantStable(false)),
		},
	}
}

func TestOffsetFetchRequireStable(t *testing.T) {
	stableFetch := fetchOf(func(_ *testing.T, _ *scene, r *kmsg.OffsetFetchRequest) { r.RequireStable = true })
	unstable := kerr.UnstableOffsetCommit.Code
	rows := []apiRow[*kmsg.OffsetFetchResponse]{
		{name: "pending transactional offsets", since: 7, setup: withTxnOffsets, req: stableFetch, codes: []int16{0, unstable, unstable}},
		{
			name: "pending over committed offsets", since: 7, setup: steps(withOffsets, withTxnOffsets), req: stableFetch,
			codes: []int16{0, unstable, unstable},
		},
		{
			name: "all topics: the committed ones with pending offsets", since: 7, setup: steps(withOffsets, withTxnOffsets),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := offsetFetchReq([]string{s.group}, nil)
				req.RequireStable = true
				return req
			},
			codes: []int16{0, unstable, unstable, 0},
		},
		{name: "without RequireStable", setup: steps(withOffsets, withTxnOffsets), req: fetchOf(nil), want: wantOffsetsFetched(map[string]map[int32]int64{"t": {0: 10, 1: 11}})},
		{name: "after the commit marker", since: 7, setup: steps(withTxnOffsets, groupMarker(true)), req: stableFetch, want: wantOffsetsFetched(map[string]map[int32]int64{"t": {0: 10, 1: 11}})},
		{name: "after the abort marker", since: 7, setup: steps(withTxnOffsets, groupMarker(false)), req: stableFetch, want: wantOffsetsFetched(map[string]map[int32]int64{"t": {0: -1, 1: -1}})},
	}
	for i := range rows {
		rows[i].scene = unverified(rows[i].scene) // withTxnOffsets' producer is no coordinator's
	}
	runRows(t, tableOpts{groups: true, codes: codesOf(fetchCodes)}, rows)
}
