package handler

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/broker/wire"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/tier/record"
)

// apiCase is one row of an API's table test: the broker it runs on, the
// state setup brings it to, the request, and what the answer must be.
// Security (ACLs) and transactions append their rows to the same tables.
//
// Each row runs at each of its versions on a fresh broker inside a
// synctest bubble: waits (a fetch's long poll, an acks=all produce) run on
// the bubble's fake clock, which starts at the same instant every run, so
// timeouts cost nothing and "answered at once" is exact.
type apiCase[Req kmsg.Request, Resp kmsg.Response] struct {
	name string
	// versions the row runs at; nil: the lowest and the highest served.
	versions []int16
	opts     brokerOpts
	setup    func(t *testing.T, s *scene)
	req      func(s *scene) Req
	// during, when set, runs once the request blocks waiting (a long poll,
	// an acks=all produce) and should let it finish.
	during func(t *testing.T, s *scene)
	// closes: the broker must close the connection rather than answer.
	closes bool
	want   check[Resp]
	// skip names a known deviation from Kafka the row documents.
	skip string
}

// runCases runs every row of an API's table as a subtest per version.
func runCases[Req kmsg.Request, Resp kmsg.Response](t *testing.T, cases []apiCase[Req, Resp]) {
	t.Helper()
	var probe Req
	api, ok := Lookup(probe.Key())
	if !ok {
		t.Fatalf("api %d not registered", probe.Key())
	}
	for _, c := range cases {
		if strings.Contains(c.name, ",") {
			t.Fatalf("case %q: a comma in a test name splits its log.dirs", c.name)
		}
		vs := c.versions
		if vs == nil {
			vs = slices.Compact([]int16{api.Min, api.Max})
		}
		for _, v := range vs {
			t.Run(fmt.Sprintf("%s/v%d", c.name, v), func(t *testing.T) {
				if c.skip != "" {
					t.Skip(c.skip)
				}
				t.Parallel()
				synctest.Test(t, func(t *testing.T) { c.run(t, v) })
			})
		}
	}
}

func (c apiCase[Req, Resp]) run(t *testing.T, v int16) {
	s := newScene(t, c.opts, v)
	if c.setup != nil {
		c.setup(t, s)
	}
	req := onTheWire(t, c.req(s), v)
	start := time.Now()
	var resp kmsg.Response
	var err error
	if c.during == nil {
		resp, err = s.try(req)
	} else {
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err = s.try(req)
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("answered at once; the row expects the request to wait")
		default:
		}
		c.during(t, s)
		<-done
	}
	s.took = time.Since(start)
	switch {
	case c.closes && err == nil:
		t.Fatalf("answered %+v; want the connection closed", resp)
	case c.closes:
		return
	case err != nil:
		t.Fatalf("%s v%d: %v", kmsg.NameForKey(req.Key()), v, err)
	}
	var r Resp
	if resp != nil {
		r = resp.(Resp)
	}
	if c.want != nil {
		c.want(t, s, r)
	}
}

// onTheWire is req at version v as the broker decodes it from a client:
// fields the version does not carry are at their defaults.
func onTheWire(t *testing.T, req kmsg.Request, v int16) kmsg.Request {
	t.Helper()
	req.SetVersion(v)
	decoded, err := wire.DecodeBody(wire.Header{Key: req.Key(), Version: v}, req.AppendTo(nil))
	if err != nil {
		t.Fatal(err)
	}
	return decoded
}

// check examines an answer of type Resp.
type check[Resp any] = func(*testing.T, *scene, Resp)

// checks runs several checks of one answer in order.
func checks[Resp any](fs ...check[Resp]) check[Resp] {
	return func(t *testing.T, s *scene, resp Resp) {
		t.Helper()
		for _, f := range fs {
			f(t, s, resp)
		}
	}
}

// versionsFrom lists the versions of key served from v on.
func versionsFrom(key kmsg.Key, v int16) []int16 {
	a, _ := Lookup(key.Int16())
	return span(max(v, a.Min), a.Max)
}

// versionsTo lists the versions of key served up to v.
func versionsTo(key kmsg.Key, v int16) []int16 {
	a, _ := Lookup(key.Int16())
	return span(a.Min, min(v, a.Max))
}

// span lists the versions lo..hi.
func span(lo, hi int16) []int16 {
	var out []int16
	for v := lo; v <= hi; v++ {
		out = append(out, v)
	}
	return out
}

// scene is what one row runs in: broker 1, which gets the request, and
// the peers it needs on the same metadata store; version is the version
// the request is sent at, took how long it took on the bubble's clock.
type scene struct {
	*testBroker
	peers   []*testBroker
	version int16
	took    time.Duration
	// draining, closed by a row, tells broker 1 it stops serving.
	draining chan struct{}
}

func newScene(t *testing.T, o brokerOpts, v int16) *scene {
	s := &scene{testBroker: newTestBroker(t, onTmpfs(t, o)), version: v, draining: make(chan struct{})}
	s.env.Draining = s.draining
	return s
}

// onTmpfs puts a broker's log directory on tmpfs where the system has
// one: a new partition's log fsyncs several files, which on a disk costs
// a table of rows seconds.
func onTmpfs(t *testing.T, o brokerOpts) brokerOpts {
	t.Helper()
	if _, ok := o.config["log.dirs"]; ok {
		return o
	}
	dir, err := os.MkdirTemp("/dev/shm", "strata-handler-test-")
	if err != nil {
		return o // no tmpfs: the test's temporary directory
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	o.config = maps.Clone(o.config)
	if o.config == nil {
		o.config = map[string]string{}
	}
	o.config["log.dirs"] = dir
	return o
}

// step is a piece of a row's setup.
type step = func(t *testing.T, s *scene)

// steps runs setup steps in order.
func steps(ss ...step) step {
	return func(t *testing.T, s *scene) {
		t.Helper()
		for _, st := range ss {
			st(t, s)
		}
	}
}

// peer starts broker id (with config) on the same metadata store.
func (s *scene) peer(t *testing.T, id int32, config map[string]string) *testBroker {
	t.Helper()
	p := newTestBroker(t, onTmpfs(t, brokerOpts{id: id, backend: s.store.Backend(), config: config}))
	s.peers = append(s.peers, p)
	return p
}

// withPeer is a step starting peer broker id.
func withPeer(id int32, config map[string]string) step {
	return func(t *testing.T, s *scene) { s.peer(t, id, config) }
}

// withTopic is a step creating topic name with n partitions led here (as
// long as no peer was started: then they are spread over the brokers).
func withTopic(name string, n int32, configs map[string]string) step {
	return func(t *testing.T, s *scene) { s.createTopic(t, name, n, configs) }
}

// withAssignedTopic is a step creating topic name with the replicas of
// each partition given (the first one leads, all are in the ISR).
func withAssignedTopic(name string, assignment map[int32][]int32, configs map[string]string) step {
	return func(t *testing.T, s *scene) {
		t.Helper()
		spec := topicSpec{name: name, assignment: assignment, configs: configs}
		if _, err := s.env.createTopic(context.Background(), spec, false); err != nil {
			t.Fatalf("create topic %s: %v", name, err)
		}
		s.sync(t)
	}
}

// sync brings every broker's partitions in step with the metadata now
// (their managers would, a moment later).
func (s *scene) sync(t *testing.T) {
	t.Helper()
	for _, b := range append([]*testBroker{s.testBroker}, s.peers...) {
		if err := b.env.Partitions.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

// setState rewrites a partition's state in the metadata store (the
// controller's part) and applies it on every broker.
func (s *scene) setState(t *testing.T, topic string, idx int32, change func(st *metadata.PartitionState)) {
	t.Helper()
	tp, ok := s.env.Cache.Topic(topic)
	if !ok {
		t.Fatalf("no topic %s", topic)
	}
	cur := tp.Partitions[idx]
	next := cur.Clone()
	change(&next)
	next.PartitionEpoch = cur.PartitionEpoch + 1
	if _, err := s.store.CompareAndSetPartition(context.Background(), topic, idx, cur.PartitionEpoch, next); err != nil {
		t.Fatal(err)
	}
	s.sync(t)
}

// withState is a step rewriting a partition's state (see setState).
func withState(topic string, idx int32, change func(st *metadata.PartitionState)) step {
	return func(t *testing.T, s *scene) { s.setState(t, topic, idx, change) }
}

// bumpEpoch is a step giving a partition a new leader epoch under the
// same leader, as a controller's re-election does.
func bumpEpoch(topic string, idx int32) step {
	return withState(topic, idx, func(st *metadata.PartitionState) { st.LeaderEpoch++ })
}

// topicID is the id of topic, zero for an unknown one.
func (s *scene) topicID(name string) [16]byte {
	t, _ := s.env.Cache.Topic(name)
	return t.ID
}

// part is a partition of broker 1.
func (s *scene) part(t *testing.T, topic string, idx int32) *partition.Partition {
	t.Helper()
	p, ok := s.env.Partitions.Get(topic, idx)
	if !ok {
		t.Fatalf("broker 1 has no partition %s-%d", topic, idx)
	}
	return p
}

// produce appends batches to a partition through Produce (acks=1, one
// request each) and returns the base offset of the last. The batches are
// copied: the broker stamps its offsets into the request.
func (s *scene) produce(t *testing.T, topic string, idx int32, batches ...record.Batch) int64 {
	t.Helper()
	base := int64(-1)
	for _, b := range batches {
		req := produceReq(s, 1, topic, idx, slices.Clone(b))
		req.SetVersion(9)
		sp := producePart(t, s.do(t, req).(*kmsg.ProduceResponse))
		if sp.ErrorCode != 0 {
			t.Fatalf("produce to %s-%d: error %d %v", topic, idx, sp.ErrorCode, sp.ErrorMessage)
		}
		base = sp.BaseOffset
	}
	return base
}

// withRecords is a step producing batches to a partition.
func withRecords(topic string, idx int32, batches ...record.Batch) step {
	return func(t *testing.T, s *scene) { s.produce(t, topic, idx, batches...) }
}

// followerFetch fetches a partition from broker 1 as follower replica at
// offset (its log end), as its fetcher would; it moves the high watermark.
func (s *scene) followerFetch(t *testing.T, replica int32, topic string, idx int32, offset int64) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := fetchReq(s, fetchAt{topic, idx, offset})
	req.SetVersion(17)
	req.ReplicaID, req.ReplicaState.ID = replica, replica
	return fetchPart(t, s.do(t, req).(*kmsg.FetchResponse))
}

// t0 is when every bubble's clock starts (2000-01-01 UTC), in Kafka's
// milliseconds: record timestamps are given relative to it.
var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

// batch is a batch of one record per value, timestamped t0, t0+1, ….
func batch(values ...string) record.Batch {
	return batchWith(record.BuildOptions{}, values...)
}

// batchAt is a batch of one record per value, timestamped ts, ts+1, ….
func batchAt(ts int64, values ...string) record.Batch {
	return batchWith(record.BuildOptions{FirstTimestamp: ts}, values...)
}

// batchWith is a batch with the header opts (first timestamp t0 unless
// given) of one record per value, timestamped one millisecond apart.
func batchWith(opts record.BuildOptions, values ...string) record.Batch {
	opts.FirstTimestamp = cmp.Or(opts.FirstTimestamp, t0)
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{TimestampDelta: int64(i), Value: []byte(v)}
	}
	return record.NewBatch(opts, recs...)
}

// keyedBatch is a batch of one record with a key, timestamped t0.
func keyedBatch(key, value string) record.Batch {
	return record.NewBatch(record.BuildOptions{FirstTimestamp: t0}, record.Record{Key: []byte(key), Value: []byte(value)})
}

// mustRecords decodes the record batches of a fetch answer into their
// records' offsets and values.
func mustRecords(t *testing.T, raw []byte) (offsets []int64, values []string) {
	t.Helper()
	batches, err := record.Split(raw)
	if err != nil {
		t.Fatalf("fetched bytes: %v", err)
	}
	for _, b := range batches {
		recs, err := b.Records()
		if err != nil {
			t.Fatalf("fetched batch at %d: %v", b.BaseOffset(), err)
		}
		for _, r := range recs {
			offsets = append(offsets, b.Offset(r))
			values = append(values, string(r.Value))
		}
	}
	return offsets, values
}

// wantLogEnd checks that broker 1's partition ends at leo: nothing else
// was appended.
func wantLogEnd[Resp any](topic string, idx int32, leo int64) check[Resp] {
	return func(t *testing.T, s *scene, _ Resp) {
		t.Helper()
		if got := s.part(t, topic, idx).Log().LogEndOffset(); got != leo {
			t.Errorf("log end of %s-%d: %d, want %d", topic, idx, got, leo)
		}
	}
}

// unknownTopic is the code for a topic the broker does not know, asked
// for by id from version byID on (KIP-516).
func unknownTopic(s *scene, byID int16) int16 {
	if s.version >= byID {
		return kerr.UnknownTopicID.Code
	}
	return kerr.UnknownTopicOrPartition.Code
}
