package handler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/peer"
	"github.com/strata-broker/strata/broker/wire"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/controller"
	"github.com/strata-broker/strata/metadata/memstore"
)

// electCluster is testBrokers on one backend, each with a controller
// candidate and an observer like a real broker, forwarding to each other
// in-process (peers).
type electCluster struct {
	backend *memstore.Backend
	brokers map[int32]*testBroker
	ctls    map[int32]*controller.Controller
	gates   map[int32]*writeGate
	peers   *inProcessPeers
}

// newElectCluster starts brokers ids without controllers (startController
// adds them, in campaign order).
func newElectCluster(t *testing.T, ids ...int32) *electCluster {
	t.Helper()
	c := &electCluster{backend: memstore.NewBackend(), brokers: map[int32]*testBroker{},
		ctls: map[int32]*controller.Controller{}, gates: map[int32]*writeGate{}}
	c.peers = &inProcessPeers{brokers: c.brokers}
	for _, id := range ids {
		b := newTestBroker(t, brokerOpts{id: id, backend: c.backend})
		b.env.Controller = controller.Observe(t.Context(), b.store)
		b.env.Peers = c.peers
		c.brokers[id] = b
	}
	return c
}

// startController runs broker id's controller candidate until the test
// ends; its term's writes pass through a writeGate.
func (c *electCluster) startController(t *testing.T, id int32) *controller.Controller {
	t.Helper()
	b := c.brokers[id]
	gate := &writeGate{held: make(chan struct{}, 1), out: make(chan error, 1)}
	ctl := controller.New(gatedStore{b.store, gate}, id, controller.Options{Log: slog.New(slog.DiscardHandler)})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ctl.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	b.env.Elector = ctl
	c.ctls[id], c.gates[id] = ctl, gate
	return ctl
}

// waitUntil polls cond (every few milliseconds, at most 10 s).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// controllerIs waits until broker id is the active controller and every
// broker's observer names it.
func (c *electCluster) controllerIs(t *testing.T, id int32) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("controller %d", id), func() bool {
		if !c.ctls[id].IsLeader() {
			return false
		}
		for _, b := range c.brokers {
			if b.env.Controller.ControllerID() != id {
				return false
			}
		}
		return true
	})
}

// gatedStore is a broker's store whose controller terms pass their writes
// through gate: a test holds a write just before it reaches the store.
type gatedStore struct {
	*memstore.Store
	gate *writeGate
}

func (s gatedStore) Campaign(ctx context.Context, id int32, ttl time.Duration) (metadata.Term, error) {
	t, err := s.Store.Campaign(ctx, id, ttl)
	if err != nil {
		return nil, err
	}
	return gatedTerm{t, s.gate}, nil
}

type gatedTerm struct {
	metadata.Term
	gate *writeGate
}

func (t gatedTerm) CompareAndSetPartition(ctx context.Context, topic string, partition, prev int32, next metadata.PartitionState) (int64, error) {
	if !t.gate.armed.CompareAndSwap(true, false) {
		return t.Term.CompareAndSetPartition(ctx, topic, partition, prev, next)
	}
	t.gate.held <- struct{}{}
	select {
	case <-t.gate.release:
	case <-ctx.Done():
	}
	rev, err := t.Term.CompareAndSetPartition(ctx, topic, partition, prev, next)
	t.gate.out <- err
	return rev, err
}

// writeGate holds the next controller write once armed: held receives
// when it arrives, closing release lets it go on, out receives its error.
type writeGate struct {
	armed   atomic.Bool
	held    chan struct{}
	release chan struct{}
	out     chan error
}

func (g *writeGate) arm(release chan struct{}) {
	g.release = release
	g.armed.Store(true)
}

// inProcessPeers forwards requests to the brokers of one test, through
// the wire encoding both ways, with the client id of broker/peer. Other
// ids are unreachable.
type inProcessPeers struct {
	brokers map[int32]*testBroker
	sent    atomic.Int32
	// hold, when set before the requests, holds each until it is closed.
	hold chan struct{}
}

func (p *inProcessPeers) Request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	p.sent.Add(1)
	if p.hold != nil {
		select {
		case <-p.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	b, ok := p.brokers[id]
	if !ok {
		return nil, fmt.Errorf("broker %d unreachable", id)
	}
	return serveAs(ctx, b, peer.ClientID, req)
}

// serveAs sends req to b as a client with clientID would, with its own
// correlation id (so that it may run beside b.do).
func serveAs(ctx context.Context, b *testBroker, clientID string, req kmsg.Request) (kmsg.Response, error) {
	raw := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(nil, req, 1)
	h, body, err := wire.ParseHeader(raw[4:])
	if err != nil {
		return nil, err
	}
	decoded, err := wire.DecodeBody(h, body)
	if err != nil {
		return nil, err
	}
	api, ok := Lookup(h.Key)
	if !ok || !Supported(h.Key, h.Version) {
		return nil, fmt.Errorf("%s v%d not served", kmsg.NameForKey(h.Key), h.Version)
	}
	res, err := api.Fn(ctx, b.env, &Request{Header: h, Body: decoded, Bytes: len(raw)})
	if err != nil {
		return nil, err
	}
	f, err := wire.EncodeResponse(h.CorrelationID, res.Resp, res.Marker, res.Regions)
	if err != nil {
		return nil, err
	}
	return decodeFrame(req, f)
}

// electReq builds an ElectLeaders request; nil parts means every partition.
func electReq(version int16, typ controller.ElectionType, timeout time.Duration, parts map[string][]int32) *kmsg.ElectLeadersRequest {
	r := kmsg.NewPtrElectLeadersRequest()
	r.SetVersion(version)
	r.ElectionType = int8(typ)
	r.TimeoutMillis = int32(timeout.Milliseconds())
	for topic, ps := range parts {
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = topic, ps
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// codes flattens a response into topic → partition → code.
func codes(resp kmsg.Response) map[string]map[int32]int16 {
	out := map[string]map[int32]int16{}
	for _, t := range resp.(*kmsg.ElectLeadersResponse).Topics {
		out[t.Topic] = map[int32]int16{}
		for _, p := range t.Partitions {
			out[t.Topic][p.Partition] = p.ErrorCode
		}
	}
	return out
}

// createPartitions writes topic with the given partition states.
func createPartitions(t *testing.T, s *memstore.Store, topic string, parts map[int32]metadata.PartitionState) {
	t.Helper()
	if _, err := s.CreateTopic(t.Context(), metadata.Topic{Name: topic, Partitions: parts}); err != nil {
		t.Fatal(err)
	}
}

// ps is a partition state led by leader.
func ps(leader int32, replicas, isr []int32) metadata.PartitionState {
	return metadata.PartitionState{Replicas: replicas, Leader: leader, ISR: isr}
}

// TestElectLeadersDeposedControllerIsFenced: controller 1 is about to
// write an election when its session ends; controller 2 is elected and
// an ElectLeaders sent to broker 2 is about to write the same partition
// from the same state. Both writes go at once: only the current term's
// lands; the deposed one fails with ErrFenced and changes nothing. The
// request broker 1 was serving is then forwarded to controller 2 and
// answered from the state it wrote.
func TestElectLeadersDeposedControllerIsFenced(t *testing.T) {
	c := newElectCluster(t, 1, 2, 3)
	createPartitions(t, c.brokers[1].store, "t", map[int32]metadata.PartitionState{0: ps(2, []int32{1, 2, 3}, []int32{1, 2, 3})})
	c.startController(t, 1)
	c.controllerIs(t, 1)
	c.startController(t, 2) // waits in line

	release := make(chan struct{})
	c.peers.hold = make(chan struct{}) // broker 1 forwards only once both writes are done
	req := func(id int32) <-chan kmsg.Response {
		ch := make(chan kmsg.Response, 1)
		go func() {
			resp, err := serveAs(t.Context(), c.brokers[id], "admin", electReq(2, controller.ElectPreferred, 10*time.Second, map[string][]int32{"t": {0}}))
			if err != nil {
				t.Error(err)
			}
			ch <- resp
		}()
		return ch
	}
	c.gates[1].arm(release)
	deposed := req(1)
	<-c.gates[1].held // controller 1 decided leader 1 from partition epoch 0

	if !c.backend.ExpireControllerSession(1) {
		t.Fatal("no session of controller 1")
	}
	c.controllerIs(t, 2)
	c.gates[2].arm(release)
	current := req(2)
	<-c.gates[2].held // controller 2 decided the same from the same epoch

	close(release) // both writes at once
	if err := <-c.gates[1].out; !errors.Is(err, metadata.ErrFenced) {
		t.Fatalf("deposed controller's write: %v, want ErrFenced", err)
	}
	if err := <-c.gates[2].out; err != nil {
		t.Fatalf("current controller's write: %v", err)
	}
	close(c.peers.hold)
	if got := codes(<-current)["t"][0]; got != 0 {
		t.Fatalf("ElectLeaders on controller 2: code %d, want none", got)
	}
	if got := codes(<-deposed)["t"][0]; got != kerr.ElectionNotNeeded.Code {
		t.Fatalf("ElectLeaders on deposed broker 1: code %d, want ELECTION_NOT_NEEDED from controller 2", got)
	}
	s, _ := c.brokers[3].store.Cache().Partition("t", 0)
	if s.Leader != 1 || s.LeaderEpoch != 1 || s.PartitionEpoch != 1 {
		t.Fatalf("partition = %+v, want leader 1 after exactly one write (epochs 1/1)", s)
	}
}

// TestElectLeadersOnController: the controller broker runs the elections
// and answers each partition's outcome; an unknown type is refused.
func TestElectLeadersOnController(t *testing.T) {
	c := newElectCluster(t, 1)
	s := c.brokers[1].store
	for id := int32(2); id <= 3; id++ { // live brokers without a testBroker
		reg, err := s.RegisterBroker(t.Context(), metadata.Broker{ID: id, Host: "127.0.0.1", Port: 9200 + id}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = reg.Close() })
	}
	createPartitions(t, s, "t", map[int32]metadata.PartitionState{
		0: ps(2, []int32{1, 2}, []int32{1, 2}), // preferred 1 in sync: moves
		1: ps(1, []int32{1, 2}, []int32{1, 2}), // already preferred
		2: ps(3, []int32{2, 3}, []int32{3}),    // preferred 2 out of sync
		3: ps(metadata.NoLeader, []int32{4, 3}, []int32{4}),
	})
	c.startController(t, 1)
	c.controllerIs(t, 1)
	b := c.brokers[1]

	got := codes(b.do(t, electReq(1, controller.ElectPreferred, 5*time.Second, map[string][]int32{"t": {0, 1, 2}, "nope": {0}})))
	want := map[string]map[int32]int16{
		"t":    {0: 0, 1: kerr.ElectionNotNeeded.Code, 2: kerr.PreferredLeaderNotAvailable.Code},
		"nope": {0: kerr.UnknownTopicOrPartition.Code},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("preferred: %v, want %v", got, want)
	}
	if p0, _ := s.Cache().Partition("t", 0); p0.Leader != 1 {
		t.Fatalf("t-0 = %+v", p0)
	}
	// Unclean: partition 3's only live replica, 3, is out of the ISR.
	got = codes(b.do(t, electReq(1, controller.ElectUnclean, 5*time.Second, map[string][]int32{"t": {1, 3}})))
	if got["t"][1] != kerr.ElectionNotNeeded.Code || got["t"][3] != 0 {
		t.Fatalf("unclean: %v", got)
	}
	if p3, _ := s.Cache().Partition("t", 3); p3.Leader != 3 {
		t.Fatalf("t-3 = %+v, want unclean leader 3", p3)
	}
	// Null topics: every partition; v0 is always preferred.
	got = codes(b.do(t, electReq(0, controller.ElectUnclean, 5*time.Second, nil)))
	if len(got["t"]) != 4 || got["t"][1] != kerr.ElectionNotNeeded.Code || got["t"][2] != kerr.PreferredLeaderNotAvailable.Code {
		t.Fatalf("all partitions, v0: %v", got)
	}
	resp := b.do(t, electReq(1, 7, 5*time.Second, nil)).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown election type: %d", resp.ErrorCode)
	}
	if n := c.peers.sent.Load(); n != 0 {
		t.Fatalf("the controller forwarded %d requests", n)
	}
}

// TestElectLeadersForwarded: a broker that is not the controller forwards
// the request (explicit partitions or all) and relays the answer; a
// request forwarded to a broker that is not the controller is answered
// NOT_CONTROLLER, never forwarded again.
func TestElectLeadersForwarded(t *testing.T) {
	c := newElectCluster(t, 1, 2)
	createPartitions(t, c.brokers[1].store, "t", map[int32]metadata.PartitionState{
		0: ps(2, []int32{1, 2}, []int32{1, 2}),
		1: ps(2, []int32{2, 1}, []int32{2, 1}),
	})
	c.startController(t, 1)
	c.controllerIs(t, 1)
	c.startController(t, 2)
	b2 := c.brokers[2]

	got := codes(b2.do(t, electReq(2, controller.ElectPreferred, 5*time.Second, map[string][]int32{"t": {0}})))
	if got["t"][0] != 0 || c.peers.sent.Load() != 1 {
		t.Fatalf("forwarded election: %v after %d forwards", got, c.peers.sent.Load())
	}
	got = codes(b2.do(t, electReq(2, controller.ElectPreferred, 5*time.Second, nil)))
	if len(got["t"]) != 2 || got["t"][0] != kerr.ElectionNotNeeded.Code || got["t"][1] != kerr.ElectionNotNeeded.Code {
		t.Fatalf("forwarded election of all partitions: %v", got)
	}

	sent := c.peers.sent.Load()
	kresp, err := serveAs(t.Context(), b2, peer.ClientID, electReq(2, controller.ElectPreferred, 5*time.Second, map[string][]int32{"t": {0}}))
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != kerr.NotController.Code || codes(resp)["t"][0] != kerr.NotController.Code {
		t.Fatalf("forwarded request at a non-controller: %+v", resp)
	}
	if n := c.peers.sent.Load(); n != sent {
		t.Fatalf("a forwarded request was forwarded again (%d forwards)", n-sent)
	}
}

// TestElectLeadersWaitsForController: a request that finds no controller
// waits for one within its timeout and is then answered NOT_CONTROLLER; one
// whose controller cannot be reached keeps trying it, answers
// REQUEST_TIMED_OUT at its timeout, and is served as soon as the role
// moves to a reachable broker (here the single broker itself).
func TestElectLeadersWaitsForController(t *testing.T) {
	c := newElectCluster(t, 1)
	createPartitions(t, c.brokers[1].store, "t", map[int32]metadata.PartitionState{0: ps(1, []int32{1}, []int32{1})})
	b := c.brokers[1]

	resp := b.do(t, electReq(1, controller.ElectPreferred, 50*time.Millisecond, nil)).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != kerr.NotController.Code || codes(resp)["t"][0] != kerr.NotController.Code {
		t.Fatalf("no controller: %+v", resp)
	}

	// Broker 99, which no broker can reach, holds the controller role.
	other := c.backend.Open()
	t.Cleanup(func() { _ = other.Close() })
	held, err := other.Campaign(t.Context(), 99, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.startController(t, 1) // in line behind 99
	waitUntil(t, "observer names 99", func() bool { return b.env.Controller.ControllerID() == 99 })
	got := codes(b.do(t, electReq(1, controller.ElectPreferred, 100*time.Millisecond, map[string][]int32{"t": {0}})))
	if got["t"][0] != kerr.RequestTimedOut.Code || c.peers.sent.Load() == 0 {
		t.Fatalf("unreachable controller: %v after %d attempts", got, c.peers.sent.Load())
	}

	sent := c.peers.sent.Load()
	done := make(chan kmsg.Response, 1)
	go func() {
		resp, err := serveAs(t.Context(), b, "admin", electReq(1, controller.ElectPreferred, 10*time.Second, map[string][]int32{"t": {0}}))
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	waitUntil(t, "the request trying 99", func() bool { return c.peers.sent.Load() > sent })
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	if got := codes(<-done); got["t"][0] != kerr.ElectionNotNeeded.Code {
		t.Fatalf("after the role moved to broker 1: %v", got)
	}
}
