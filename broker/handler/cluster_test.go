package handler

import (
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/metadata/memstore"
)

// cluster is what one row of an API's test table runs against: brokers in
// process on one metadata backend (b is the one requests go to) and what
// the row's setup made, for its request to name.
type cluster struct {
	b       *testBroker
	brokers []*testBroker // b first
	backend *memstore.Backend
	v       int16          // the version the row runs at
	group   string         // the group rows ask about: "g" unless setup chose another
	members []*groupMember // formed by setup, in join order
}

// clusterOpts shape a cluster: how many brokers, their configuration, and
// whether the group coordinators are ready (__consumer_offsets created
// and loaded) before the row's setup runs.
type clusterOpts struct {
	brokers int               // 0: 1
	config  map[string]string // broker keys of every broker
	groups  bool
}

// newCluster starts the brokers 1..n of o on a fresh backend. With groups,
// __consumer_offsets gets one partition per broker (offsets.topic.num.
// partitions, unless o.config says otherwise) and every coordinator has
// loaded the partitions it leads.
func newCluster(t *testing.T, o clusterOpts) *cluster {
	t.Helper()
	n := max(o.brokers, 1)
	s := &cluster{backend: memstore.NewBackend(), group: "g"}
	for id := range int32(n) {
		cfg := map[string]string{"offsets.topic.num.partitions": strconv.Itoa(n), "log.dirs": logDir(t)}
		maps.Copy(cfg, o.config)
		s.brokers = append(s.brokers, newTestBroker(t, brokerOpts{id: id + 1, backend: s.backend, config: cfg}))
	}
	s.b = s.brokers[0]
	if o.groups {
		s.awaitCoordinators(t)
	}
	return s
}

// logDir is a directory for a broker's logs, removed at the end of the
// test: on tmpfs where the machine has one (/dev/shm), since these tests
// are about the handlers and a disk's fsyncs would make them wait on I/O
// most of their time; else a temporary directory.
func logDir(t *testing.T) string {
	if dir, err := os.MkdirTemp("/dev/shm", "strata-handler-test-"); err == nil {
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		return dir
	}
	return t.TempDir()
}

// awaitCoordinators creates __consumer_offsets (through FindCoordinator)
// and waits until every broker has loaded the partitions it leads. It
// runs in a synctest bubble, where the waits cost no real time.
func (s *cluster) awaitCoordinators(t *testing.T) {
	t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = "any"
	if resp := s.b.do(t, req).(*kmsg.FindCoordinatorResponse); resp.ErrorCode != 0 {
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

func (s *cluster) coordinatorsLoaded() bool {
	topic, ok := s.b.env.Cache.Topic(group.TopicName)
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
func (s *cluster) groupLedBy(t *testing.T, id int32) string {
	t.Helper()
	topic, ok := s.b.env.Cache.Topic(group.TopicName)
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

// topicID is the id of an existing topic.
func (s *cluster) topicID(t *testing.T, name string) [16]byte {
	t.Helper()
	topic, ok := s.b.env.Cache.Topic(name)
	if !ok {
		t.Fatalf("topic %s does not exist", name)
	}
	return topic.ID
}

// send encodes req at version v as a client would and hands the broker
// what it decodes, so that fields the version does not carry are not
// seen; it returns the decoded response.
func (b *testBroker) send(t testing.TB, req kmsg.Request, v int16) kmsg.Response {
	t.Helper()
	resp, err := b.trySend(req, v)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// sendAsync is send from a goroutine of its own, for requests that wait
// (JoinGroup, SyncGroup): the channel receives the response, or nil
// after reporting an error.
func (b *testBroker) sendAsync(t testing.TB, req kmsg.Request, v int16) <-chan kmsg.Response {
	ch := make(chan kmsg.Response, 1)
	go func() {
		resp, err := b.trySend(req, v)
		if err != nil {
			t.Error(err)
		}
		ch <- resp
	}()
	return ch
}

func (b *testBroker) trySend(req kmsg.Request, v int16) (kmsg.Response, error) {
	name := fmt.Sprintf("%s v%d", kmsg.NameForKey(req.Key()), v)
	req.SetVersion(v)
	got := kmsg.RequestForKey(req.Key())
	got.SetVersion(v)
	if err := got.ReadFrom(req.AppendTo(nil)); err != nil {
		return nil, fmt.Errorf("%s: decode request: %w", name, err)
	}
	resp, err := b.try(got)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return resp, nil
}

// apiRow is one row of an API's table: the state a request meets, the
// request, and what it must answer. Each row runs on a fresh cluster in a
// synctest bubble (timeouts pass instantly), once per version: the
// lowest and the highest served, or from since on, or exactly versions.
// Security and transaction rows are appended to the same tables.
type apiRow[R kmsg.Response] struct {
	name     string
	cluster  clusterOpts // groups is set by the table's runner where needed
	since    int16       // lowest version the row applies to
	versions []int16     // when set, exactly these
	setup    func(t *testing.T, s *cluster)
	req      func(t *testing.T, s *cluster) kmsg.Request
	// codes are the response's error codes in the order the table's
	// codes function lists them; nil: every one is 0.
	codes []int16
	check func(t *testing.T, s *cluster, resp R)
}

// runRows runs an API's table; codes lists a response's error codes
// (nil: errorCodes) and groups says that every cluster needs ready group
// coordinators.
func runRows[R kmsg.Response](t *testing.T, groups bool, codes func(R) []int16, cases []apiRow[R]) {
	t.Helper()
	if codes == nil {
		codes = errorCodes[R]
	}
	var zero R
	api, ok := Lookup(zero.Key())
	if !ok {
		t.Fatalf("api %d not registered", zero.Key())
	}
	for _, c := range cases {
		versions := c.versions
		if versions == nil {
			versions = slices.Compact([]int16{max(api.Min, c.since), api.Max})
		}
		for _, v := range versions {
			t.Run(fmt.Sprintf("%s/v%d", c.name, v), func(t *testing.T) {
				t.Parallel() // rows spend most of their time in their logs' file I/O
				synctest.Test(t, func(t *testing.T) {
					o := c.cluster
					o.groups = o.groups || groups
					s := newCluster(t, o)
					s.v = v
					if c.setup != nil {
						c.setup(t, s)
					}
					resp := s.b.send(t, c.req(t, s), v).(R)
					wantCodes(t, codes(resp), c.codes)
					if c.check != nil {
						c.check(t, s, resp)
					}
				})
			})
		}
	}
}

// errorCodes lists the ErrorCode fields of a response depth first, in
// field order: a top-level code (where the API has one) before those of
// its items, an item's before those of its sub-items.
func errorCodes[R kmsg.Response](r R) []int16 {
	var out []int16
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			for i := range v.NumField() {
				f := v.Type().Field(i)
				switch {
				case f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16:
					out = append(out, int16(v.Field(i).Int()))
				case f.IsExported():
					walk(v.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(r))
	return out
}

// wantCodes compares error codes; want nil asks for all zero.
func wantCodes(t *testing.T, got, want []int16) {
	t.Helper()
	if want == nil {
		want = make([]int16, len(got))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("error codes %v, want %v", codeNames(got), codeNames(want))
	}
}

func codeNames(codes []int16) []string {
	out := make([]string, len(codes))
	for i, c := range codes {
		out[i] = "NONE"
		if err := kerr.ErrorForCode(c); err != nil {
			out[i] = err.(*kerr.Error).Message
		}
	}
	return out
}

// inOrder is a setup running setups in order.
func inOrder(setups ...func(*testing.T, *cluster)) func(*testing.T, *cluster) {
	return func(t *testing.T, s *cluster) {
		for _, f := range setups {
			f(t, s)
		}
	}
}

// groupMember is a group member a row's setup formed.
type groupMember struct {
	id       string
	gen      int32   // classic generation, or KIP-848 member epoch
	instance *string // group.instance.id of a static member
	// owned are the partitions a KIP-848 member owns: its last assignment.
	owned []kmsg.ConsumerGroupHeartbeatRequestTopic
}

// Error codes the tables expect, by short names.
var (
	codeInvalidTopic        = kerr.InvalidTopicException.Code
	codeInvalidPartitions   = kerr.InvalidPartitions.Code
	codeInvalidRF           = kerr.InvalidReplicationFactor.Code
	codeInvalidAssignment   = kerr.InvalidReplicaAssignment.Code
	codeInvalidConfig       = kerr.InvalidConfig.Code
	codeInvalidRequest      = kerr.InvalidRequest.Code
	codeUnknownTopic        = kerr.UnknownTopicOrPartition.Code
	codeTopicAlreadyExists  = kerr.TopicAlreadyExists.Code
	codeNotCoordinator      = kerr.NotCoordinator.Code
	codeCoordinatorNA       = kerr.CoordinatorNotAvailable.Code
	codeInvalidGroupID      = kerr.InvalidGroupID.Code
	codeUnknownMember       = kerr.UnknownMemberID.Code
	codeIllegalGeneration   = kerr.IllegalGeneration.Code
	codeRebalancing         = kerr.RebalanceInProgress.Code
	codeFencedInstance      = kerr.FencedInstanceID.Code
	codeInconsistentProto   = kerr.InconsistentGroupProtocol.Code
	codeGroupNotFound       = kerr.GroupIDNotFound.Code
	codeNonEmptyGroup       = kerr.NonEmptyGroup.Code
	codeStaleMemberEpoch    = kerr.StaleMemberEpoch.Code
	codeFencedMemberEpoch   = kerr.FencedMemberEpoch.Code
	codeUnsupportedVersion  = kerr.UnsupportedVersion.Code
	codeSubscribedToTopic   = kerr.GroupSubscribedToTopic.Code
	codeMetadataTooLarge    = kerr.OffsetMetadataTooLarge.Code
	codeInvalidSession      = kerr.InvalidSessionTimeout.Code
	codeGroupMaxSize        = kerr.GroupMaxSizeReached.Code
	codeMemberIDRequired    = kerr.MemberIDRequired.Code
	codeUnreleasedInstance  = kerr.UnreleasedInstanceID.Code
	codeUnsupportedAssignor = kerr.UnsupportedAssignor.Code
)
