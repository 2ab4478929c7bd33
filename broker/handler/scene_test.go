package handler

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/memstore"
	"github.com/strata-broker/strata/tier/record"
)

// scene is what one row of an API's table runs in: brokers in process on
// one metadata backend, the one requests go to (broker 1 unless setup
// chose another) embedded, and what the row's setup made for its request
// to name. version is the version the request is sent at, took how long
// it took on the bubble's clock.
type scene struct {
	*testBroker
	brokers []*testBroker // broker 1 first, then those setup started
	backend *memstore.Backend
	version int16
	took    time.Duration
	// draining, closed by a row, tells broker 1 it stops serving.
	draining chan struct{}
	group    string         // the group rows ask about: "g" unless setup chose another
	members  []*groupMember // formed by setup, in join order
}

// sceneOpts shape a scene: how many brokers it starts with, their
// configuration, and whether the group coordinators are ready
// (__consumer_offsets created and loaded) before the row's setup runs.
type sceneOpts struct {
	brokers int               // 0: 1
	config  map[string]string // broker keys of every broker
	groups  bool
}

// newScene starts the brokers 1..n of o on a fresh backend, for a request
// at version v. __consumer_offsets, once created, has one partition per
// broker (offsets.topic.num.partitions, unless o.config says otherwise);
// with groups it is created and every coordinator has loaded the
// partitions it leads.
func newScene(t *testing.T, o sceneOpts, v int16) *scene {
	t.Helper()
	n := max(o.brokers, 1)
	s := &scene{backend: memstore.NewBackend(), version: v, draining: make(chan struct{}), group: "g"}
	for id := range int32(n) {
		cfg := map[string]string{"offsets.topic.num.partitions": strconv.Itoa(n)}
		maps.Copy(cfg, o.config)
		s.brokers = append(s.brokers, newTestBroker(t, brokerOpts{id: id + 1, backend: s.backend, config: cfg}))
	}
	s.testBroker = s.brokers[0]
	s.env.Draining = s.draining
	if o.groups {
		s.awaitCoordinators(t)
	}
	return s
}

// awaitCoordinators creates __consumer_offsets (through FindCoordinator)
// and waits until every broker has loaded the partitions it leads. It
// runs in a synctest bubble, where the waits cost no real time.
func (s *scene) awaitCoordinators(t *testing.T) {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = "any"
	if resp := s.do(t, req).(*kmsg.FindCoordinatorResponse); resp.ErrorCode != 0 {
		t.Fatalf("find coordinator: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	for i := 0; ; i++ {
		if i == 1000 {
			t.Fatal("coordinators not loaded within 1000 rounds")
		}
		if s.coordinatorsLoaded() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *scene) coordinatorsLoaded() bool {
	topic, ok := s.env.Cache.Topic(group.TopicName)
	if !ok {
		return false
	}
	for idx, st := range topic.Partitions {
		for _, b := range s.brokers {
			if b.env.Self.ID == st.Leader && !b.env.Groups.Loaded(idx) {
				return false
			}
		}
	}
	return true
}

// groupLedBy returns a group id whose __consumer_offsets partition broker
// id leads.
func (s *scene) groupLedBy(t *testing.T, id int32) string {
	t.Helper()
	topic, ok := s.env.Cache.Topic(group.TopicName)
	if !ok {
		t.Fatalf("%s does not exist", group.TopicName)
	}
	for i := range 1000 {
		name := "group-" + strconv.Itoa(i)
		if topic.Partitions[group.PartitionFor(name, int32(len(topic.Partitions)))].Leader == id {
			return name
		}
	}
	t.Fatalf("no group led by broker %d", id)
	return ""
}

// groupMember is a group member a row's setup formed.
type groupMember struct {
	id       string
	gen      int32   // classic generation, or KIP-848 member epoch
	instance *string // group.instance.id of a static member
	// owned are the partitions a KIP-848 member owns: its last assignment.
	owned []kmsg.ConsumerGroupHeartbeatRequestTopic
}

// peer starts broker id (with its own config only) on the same metadata
// store.
func (s *scene) peer(t *testing.T, id int32, config map[string]string) *testBroker {
	t.Helper()
	p := newTestBroker(t, brokerOpts{id: id, backend: s.backend, config: config})
	s.brokers = append(s.brokers, p)
	return p
}

// withPeer is a step starting peer broker id.
func withPeer(id int32, config map[string]string) step {
	return func(t *testing.T, s *scene) { s.peer(t, id, config) }
}

// withTopic is a step creating topic name with n partitions led here (as
// long as the scene has one broker: else they are spread over the brokers).
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
	for _, b := range s.brokers {
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
