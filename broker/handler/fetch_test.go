package handler

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/tier/record"
)

type fetchRow = apiRow[*kmsg.FetchResponse]

func TestFetch(t *testing.T) {
	runRows(t, tableOpts{}, fetchRows())
}

// bigValue makes batches large enough for the byte limits to bite.
var bigValue = strings.Repeat("v", 100)

// bigBatchSize is the size of a batch holding bigValue.
var bigBatchSize = int32(len(batch(bigValue)))

func fetchRows() []fetchRow {
	return []fetchRow{
		{
			name:  "reads whole batches",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, batch("a"), batch("b", "c"))),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 0}) },
			want: checks(wantFetched(0, 0, 0, 1, 2), wantMarks(0, 3, 0), wantTook[*kmsg.FetchResponse](0),
				func(t *testing.T, s *scene, resp *kmsg.FetchResponse) {
					if _, values := mustRecords(t, fetchParts(t, resp)[0].RecordBatches); !slices.Equal(values, []string{"a", "b", "c"}) {
						t.Errorf("values %q", values)
					}
					if resp.SessionID != 0 {
						t.Errorf("session id %d: sessions are not created", resp.SessionID)
					}
				}),
		},
		{
			name:  "an offset inside a batch reads the whole batch",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, batch("a"), batch("b", "c"))),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 2}) },
			want:  wantFetched(0, 0, 1, 2),
		},
		{
			name:  "at the high watermark it waits max wait and answers empty",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, batch("a"))),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 1}) },
			want:  checks(wantFetched(0, 0), wantMarks(0, 1, 0), wantTook[*kmsg.FetchResponse](fetchWait), wantExpired("consumer", 1)),
		},
		{
			name:  "min bytes 0 answers at once",
			setup: withTopic("t", 1, nil),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := fetchReq(s, fetchAt{"t", 0, 0})
				req.MinBytes = 0
				return req
			},
			want: checks(wantFetched(0, 0), wantTook[*kmsg.FetchResponse](0), wantExpired("consumer", 0)),
		},
		{
			name:   "an append wakes the long poll",
			setup:  steps(withTopic("t", 1, nil), withRecords("t", 0, batch("a"))),
			req:    func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 1}) },
			during: func(t *testing.T, s *scene) { s.produce(t, "t", 0, batch("b")) },
			want:   checks(wantFetched(0, 0, 1), wantTook[*kmsg.FetchResponse](0), wantExpired("consumer", 0)),
		},
		{
			name:  "an append short of min bytes keeps it waiting",
			setup: withTopic("t", 1, nil),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := fetchReq(s, fetchAt{"t", 0, 0})
				req.MinBytes = 1 << 20
				return req
			},
			during: func(t *testing.T, s *scene) { s.produce(t, "t", 0, batch("a")) },
			want:   checks(wantFetched(0, 0, 0), wantTook[*kmsg.FetchResponse](fetchWait), wantExpired("consumer", 1)),
		},
		{
			name:   "a draining broker ends the long poll",
			setup:  steps(withTopic("t", 1, nil), withRecords("t", 0, batch("a"))),
			req:    func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 1}) },
			during: func(t *testing.T, s *scene) { close(s.draining) },
			want:   checks(wantFetched(0, 0), wantTook[*kmsg.FetchResponse](0), wantExpired("consumer", 0)),
		},
		{
			name:  "a partition error answers at once",
			setup: withTopic("t", 1, nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 0}, fetchAt{"t", 9, 0}) },
			want: checks(wantFetched(0, 0), wantFetched(9, kerr.UnknownTopicOrPartition.Code),
				wantTook[*kmsg.FetchResponse](0)),
		},
		{
			name:     "unknown topic",
			versions: versionsFrom(kmsg.Fetch, 0),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"nope", 0, 0}) },
			want: func(t *testing.T, s *scene, resp *kmsg.FetchResponse) {
				wantFetched(0, unknownTopic(s, 13))(t, s, resp)
				wantMarks(0, -1, -1)(t, s, resp)
			},
		},
		{
			name:  "unknown partition",
			setup: withTopic("t", 1, nil),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 1, 0}) },
			want:  wantFetched(1, kerr.UnknownTopicOrPartition.Code),
		},
		{
			name:     "follower to a consumer before v11",
			versions: versionsTo(kmsg.Fetch, 10),
			setup:    steps(withPeer(2, nil), withAssignedTopic("t", map[int32][]int32{0: {2, 1}}, nil)),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 0}) },
			want:     wantFetched(0, kerr.NotLeaderForPartition.Code),
		},
		{
			// KIP-392: up to the high watermark the leader sent, none yet.
			name:     "follower serves a v11+ consumer",
			versions: versionsFrom(kmsg.Fetch, 11),
			setup:    steps(withPeer(2, nil), withAssignedTopic("t", map[int32][]int32{0: {2, 1}}, nil)),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 0}) },
			want:     checks(wantFetched(0, 0), wantMarks(0, 0, 0)),
		},
		{
			// KIP-392: the consumer goes back to the leader.
			name:     "follower asked past its log end",
			versions: []int16{11, 17},
			setup:    steps(withPeer(2, nil), withAssignedTopic("t", map[int32][]int32{0: {2, 1}}, nil)),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 1}) },
			want:     wantFetched(0, kerr.OffsetOutOfRange.Code),
		},
		{
			name:     "not a replica",
			versions: []int16{4, 11, 17},
			setup:    steps(withPeer(2, nil), withAssignedTopic("t", map[int32][]int32{0: {2}}, nil)),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 0}) },
			want:     wantFetched(0, kerr.NotLeaderForPartition.Code),
		},
		{
			// KIP-320, from v9; older versions do not carry the epoch.
			name:     "current leader epoch older than ours",
			versions: []int16{4, 8, 9, 17},
			setup:    steps(withTopic("t", 1, nil), withRecords("t", 0, batch("a")), bumpEpoch("t", 0)),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 0}, withLeaderEpoch(0)) },
			want: func(t *testing.T, s *scene, resp *kmsg.FetchResponse) {
				if s.version >= 9 {
					wantFetched(0, kerr.FencedLeaderEpoch.Code)(t, s, resp)
				} else {
					wantFetched(0, 0, 0)(t, s, resp)
				}
			},
		},
		{
			name:     "current leader epoch newer than ours",
			versions: versionsFrom(kmsg.Fetch, 9),
			setup:    withTopic("t", 1, nil),
			req:      func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 0}, withLeaderEpoch(1)) },
			want:     wantFetched(0, kerr.UnknownLeaderEpoch.Code),
		},
		{
			name:  "offset past the log end",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, batch("a"))),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 2}) },
			want:  checks(wantFetched(0, kerr.OffsetOutOfRange.Code), wantTook[*kmsg.FetchResponse](0)),
		},
		{
			name: "offset below the log start",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, batch("a"), batch("b"), batch("c")),
				withDeletedBefore("t", 0, 2)),
			req:  func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 1}) },
			want: wantFetched(0, kerr.OffsetOutOfRange.Code),
		},
		{
			name:  "log start offset after records were deleted",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, batch("a"), batch("b"), batch("c")), withDeletedBefore("t", 0, 2)),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 2}) },
			want:  checks(wantFetched(0, 0, 2), wantMarks(0, 3, 2)),
		},

		// A read stops at its segment's end (twoPerSegment: offsets 0-1
		// in the first segment, 2-3 in the active one), so waiting can
		// add nothing to one from an older segment.
		{
			name:  "an offset in an older segment answers at once with the rest of that segment",
			setup: steps(withTopic("t", 1, twoPerSegment), withRecords("t", 0, bigBatches(4)...)),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return fetchReq(s, fetchAt{"t", 0, 1}, withMinBytes(3*bigBatchSize))
			},
			want: checks(wantFetched(0, 0, 1), wantMarks(0, 4, 0), wantTook[*kmsg.FetchResponse](0), wantExpired("consumer", 0)),
		},
		{
			name:  "an offset in the active segment waits for min bytes",
			setup: steps(withTopic("t", 1, twoPerSegment), withRecords("t", 0, bigBatches(4)...)),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return fetchReq(s, fetchAt{"t", 0, 2}, withMinBytes(3*bigBatchSize))
			},
			want: checks(wantFetched(0, 0, 2, 3), wantTook[*kmsg.FetchResponse](fetchWait), wantExpired("consumer", 1)),
		},
		{
			name: "one partition in an older segment answers the whole fetch at once",
			setup: steps(withTopic("t", 2, twoPerSegment), withRecords("t", 0, bigBatches(4)...),
				withRecords("t", 1, bigBatches(4)...)),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return fetchReq(s, fetchAt{"t", 0, 2}, fetchAt{"t", 1, 1}, withMinBytes(4*bigBatchSize))
			},
			want: checks(wantFetched(0, 0, 2, 3), wantFetched(1, 0, 1), wantTook[*kmsg.FetchResponse](0)),
		},
		{
			// Its first fetch told it the high watermark, so only the
			// segment check answers this one at once.
			name: "a follower's fetch in an older segment answers at once",
			setup: steps(rf2(twoPerSegment), withRecords("t", 0, bigBatches(4)...), func(t *testing.T, s *scene) {
				s.followerFetch(t, 2, "t", 0, 1)
			}),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return fetchReq(s, fetchAt{"t", 0, 1}, asReplica(2), withMinBytes(3*bigBatchSize))
			},
			want: checks(wantFetched(0, 0, 1), wantMarks(0, 1, 0), wantTook[*kmsg.FetchResponse](0), wantExpired("follower", 0)),
		},
		{
			name: "a follower's fetch in the active segment waits",
			setup: steps(rf2(twoPerSegment), withRecords("t", 0, bigBatches(4)...), func(t *testing.T, s *scene) {
				s.followerFetch(t, 2, "t", 0, 2)
			}),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return fetchReq(s, fetchAt{"t", 0, 2}, asReplica(2), withMinBytes(3*bigBatchSize))
			},
			want: checks(wantFetched(0, 0, 2, 3), wantTook[*kmsg.FetchResponse](fetchWait), wantExpired("follower", 1)),
		},

		// Byte limits (KIP-74).
		{
			name:  "the first partition with data gets a whole batch past max bytes",
			setup: steps(withTopic("t", 2, nil), withRecords("t", 0, batch(bigValue)), withRecords("t", 1, batch(bigValue))),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := fetchReq(s, fetchAt{"t", 0, 0}, fetchAt{"t", 1, 0})
				req.MaxBytes = 1
				return req
			},
			want: checks(wantFetched(0, 0, 0), wantFetched(1, 0)),
		},
		{
			name:  "an empty first partition does not use up the exception",
			setup: steps(withTopic("t", 2, nil), withRecords("t", 1, batch(bigValue))),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := fetchReq(s, fetchAt{"t", 0, 0}, fetchAt{"t", 1, 0})
				req.MaxBytes = 1
				return req
			},
			want: checks(wantFetched(0, 0), wantFetched(1, 0, 0)),
		},
		{
			name: "max bytes left for less than a batch: nothing more",
			setup: steps(withTopic("t", 3, nil), withRecords("t", 0, batch(bigValue)), withRecords("t", 1, batch(bigValue)),
				withRecords("t", 2, batch(bigValue))),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := fetchReq(s, fetchAt{"t", 0, 0}, fetchAt{"t", 1, 0}, fetchAt{"t", 2, 0})
				req.MaxBytes = bigBatchSize + bigBatchSize/2
				return req
			},
			want: checks(wantFetched(0, 0, 0), wantFetched(1, 0), wantFetched(2, 0)),
		},
		{
			name:  "partition max bytes below the first batch: that batch",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, batch(bigValue), batch(bigValue))),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return fetchReq(s, fetchAt{"t", 0, 0}, withPartitionMaxBytes(1))
			},
			want: wantFetched(0, 0, 0),
		},
		{
			name:  "partition max bytes: the whole batches that fit",
			setup: steps(withTopic("t", 1, nil), withRecords("t", 0, batch(bigValue), batch(bigValue), batch(bigValue))),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				return fetchReq(s, fetchAt{"t", 0, 0}, withPartitionMaxBytes(2*bigBatchSize+bigBatchSize/2))
			},
			want: wantFetched(0, 0, 0, 1),
		},
		{
			name:  "partition max bytes below a later partition's batch: nothing",
			setup: steps(withTopic("t", 2, nil), withRecords("t", 0, batch(bigValue)), withRecords("t", 1, batch(bigValue))),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := fetchReq(s, fetchAt{"t", 0, 0}, fetchAt{"t", 1, 0})
				req.Topics[0].Partitions[1].PartitionMaxBytes = 1
				return req
			},
			want: checks(wantFetched(0, 0, 0), wantFetched(1, 0)),
		},

		// What a consumer may read, and what a follower does.
		{
			name:  "read_uncommitted stops at the high watermark",
			setup: steps(rf2(nil), withRecords("t", 0, batch("a"))),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 0}) },
			want:  checks(wantFetched(0, 0), wantMarks(0, 0, 0)),
		},
		{
			name:  "read_committed stops at the last stable offset (the high watermark)",
			setup: steps(rf2(nil), withRecords("t", 0, batch("a"))),
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := fetchReq(s, fetchAt{"t", 0, 0})
				req.IsolationLevel = 1
				return req
			},
			want: checks(wantFetched(0, 0), wantMarks(0, 0, 0)),
		},
		{
			name:  "a follower reads up to the log end",
			setup: steps(rf2(nil), withRecords("t", 0, batch("a", "b"))),
			req:   func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 0}, asReplica(2)) },
			want:  checks(wantFetched(0, 0, 0, 1), wantMarks(0, 0, 0)),
		},
		{
			name: "a follower's fetch moves the high watermark and answers it at once",
			setup: steps(rf2(nil), withRecords("t", 0, batch("a", "b")), func(t *testing.T, s *scene) {
				s.followerFetch(t, 2, "t", 0, 0)
			}),
			req:  func(_ *testing.T, s *scene) kmsg.Request { return fetchReq(s, fetchAt{"t", 0, 2}, asReplica(2)) },
			want: checks(wantFetched(0, 0), wantMarks(0, 2, 0), wantTook[*kmsg.FetchResponse](0)),
		},
		{
			// KIP-392: rack-aware replica selection, for consumers that can be
			// redirected (v11+).
			name:  "a consumer in a follower's rack is sent there",
			scene: sceneOpts{config: map[string]string{"broker.rack": "a", "replica.selector.class": config.RackAwareReplicaSelector}},
			setup: steps(withPeer(2, map[string]string{"broker.rack": "b"}),
				withAssignedTopic("t", map[int32][]int32{0: {1, 2}}, nil), withRecords("t", 0, batch("a")),
				func(t *testing.T, s *scene) { s.followerFetch(t, 2, "t", 0, 1) }),
			versions: []int16{4, 10, 11, 17},
			req: func(_ *testing.T, s *scene) kmsg.Request {
				req := fetchReq(s, fetchAt{"t", 0, 0})
				req.Rack = "b"
				return req
			},
			want: func(t *testing.T, s *scene, resp *kmsg.FetchResponse) {
				sp := fetchParts(t, resp)[0]
				switch {
				case s.version < 11:
					wantFetched(0, 0, 0)(t, s, resp)
				case sp.PreferredReadReplica != 2 || len(sp.RecordBatches) != 0:
					t.Errorf("preferred read replica %d with %d bytes of records; want 2 and none", sp.PreferredReadReplica, len(sp.RecordBatches))
				}
			},
		},
	}
}

// fetchWait is the max wait of the fetches of the table.
const fetchWait = 500 * time.Millisecond

// twoPerSegment is the topic configuration that rolls a segment every two
// batches of bigValue.
var twoPerSegment = map[string]string{"segment.bytes": strconv.Itoa(int(2*bigBatchSize + bigBatchSize/2))}

// bigBatches is n batches of bigValue.
func bigBatches(n int) []record.Batch {
	out := make([]record.Batch, n)
	for i := range out {
		out[i] = batch(bigValue)
	}
	return out
}

// withMinBytes sets a fetch's min bytes.
func withMinBytes(n int32) fetchOption {
	return func(req *kmsg.FetchRequest) { req.MinBytes = n }
}

// wantExpired checks how many fetches of fetcher ("consumer" or
// "follower") waited out their max wait.
func wantExpired(fetcher string, n int) check[*kmsg.FetchResponse] {
	return func(t *testing.T, s *scene, _ *kmsg.FetchResponse) {
		t.Helper()
		reg := prometheus.NewRegistry()
		reg.MustRegister(s.env.Metrics.expired)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := 0.0
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == fetcher {
					got = m.GetCounter().GetValue()
				}
			}
		}
		if got != float64(n) {
			t.Errorf("%v expired %s fetches, want %d", got, fetcher, n)
		}
	}
}

// fetchAt is a partition to fetch and the offset to fetch it from.
type fetchAt struct {
	topic  string
	part   int32
	offset int64
}

// fetchArg is a partition to fetch (fetchAt) or a change to the request
// (fetchOption, applied in order: after the partitions it changes).
type fetchArg interface {
	addTo(s *scene, req *kmsg.FetchRequest)
}

// fetchOption changes a fetch request.
type fetchOption func(*kmsg.FetchRequest)

func (o fetchOption) addTo(_ *scene, req *kmsg.FetchRequest) { o(req) }

func (f fetchAt) addTo(s *scene, req *kmsg.FetchRequest) {
	i := slices.IndexFunc(req.Topics, func(rt kmsg.FetchRequestTopic) bool { return rt.Topic == f.topic })
	if i < 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = f.topic, s.topicID(f.topic)
		req.Topics = append(req.Topics, rt)
		i = len(req.Topics) - 1
	}
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = f.part, f.offset, 1<<20
	req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
}

// fetchReq is a consumer's fetch (min bytes 1, max wait fetchWait, limits
// of 1 MiB) of partitions named by name and by id, as args say.
func fetchReq(s *scene, args ...fetchArg) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(fetchWait.Milliseconds()), 1, 1<<20
	for _, a := range args {
		a.addTo(s, req)
	}
	return req
}

// asReplica makes a fetch the fetch of follower replica.
func asReplica(replica int32) fetchOption {
	return func(req *kmsg.FetchRequest) { req.ReplicaID, req.ReplicaState.ID = replica, replica }
}

// withLeaderEpoch sets every partition's current leader epoch.
func withLeaderEpoch(epoch int32) fetchOption {
	return func(req *kmsg.FetchRequest) {
		for i := range req.Topics {
			for j := range req.Topics[i].Partitions {
				req.Topics[i].Partitions[j].CurrentLeaderEpoch = epoch
			}
		}
	}
}

// withPartitionMaxBytes sets every partition's max bytes.
func withPartitionMaxBytes(n int32) fetchOption {
	return func(req *kmsg.FetchRequest) {
		for i := range req.Topics {
			for j := range req.Topics[i].Partitions {
				req.Topics[i].Partitions[j].PartitionMaxBytes = n
			}
		}
	}
}

// fetchParts is the answer's partitions of its one topic, by index.
func fetchParts(t *testing.T, resp *kmsg.FetchResponse) map[int32]kmsg.FetchResponseTopicPartition {
	t.Helper()
	if len(resp.Topics) != 1 {
		t.Fatalf("answer of %d topics, want 1", len(resp.Topics))
	}
	out := map[int32]kmsg.FetchResponseTopicPartition{}
	for _, sp := range resp.Topics[0].Partitions {
		out[sp.Partition] = sp
	}
	return out
}

// fetchPart is the answer for the one partition of a fetch.
func fetchPart(t *testing.T, resp *kmsg.FetchResponse) kmsg.FetchResponseTopicPartition {
	t.Helper()
	ps := fetchParts(t, resp)
	if len(ps) != 1 {
		t.Fatalf("answer of %d partitions, want 1", len(ps))
	}
	for _, sp := range ps {
		return sp
	}
	panic("unreachable")
}

// wantFetched checks partition idx's error code and the offsets of the
// records fetched.
func wantFetched(idx int32, code int16, offsets ...int64) check[*kmsg.FetchResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.FetchResponse) {
		t.Helper()
		sp, ok := fetchParts(t, resp)[idx]
		if !ok {
			t.Fatalf("no answer for partition %d", idx)
		}
		got, _ := mustRecords(t, sp.RecordBatches)
		if sp.ErrorCode != code || !slices.Equal(got, offsets) {
			t.Errorf("partition %d: error %d, offsets %v; want error %d, offsets %v", idx, sp.ErrorCode, got, code, offsets)
		}
	}
}

// wantMarks checks partition idx's high watermark, last stable offset (the
// high watermark without transactions) and, from v5, log start offset.
func wantMarks(idx int32, hw, logStart int64) check[*kmsg.FetchResponse] {
	return func(t *testing.T, s *scene, resp *kmsg.FetchResponse) {
		t.Helper()
		sp := fetchParts(t, resp)[idx]
		if sp.HighWatermark != hw || sp.LastStableOffset != hw || s.version >= 5 && sp.LogStartOffset != logStart {
			t.Errorf("partition %d: high watermark %d, last stable %d, log start %d; want %d, %d, %d",
				idx, sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset, hw, hw, logStart)
		}
	}
}

// withDeletedBefore is a step moving a partition's log start to offset.
func withDeletedBefore(topic string, idx int32, offset int64) step {
	return func(t *testing.T, s *scene) {
		t.Helper()
		if _, err := s.part(t, topic, idx).DeleteRecords(-1, offset); err != nil {
			t.Fatal(err)
		}
	}
}
