package handler

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/group"
	"github.com/strata-broker/strata/broker/partition"
	"github.com/strata-broker/strata/broker/txn"
	"github.com/strata-broker/strata/broker/txnmarkers"
	"github.com/strata-broker/strata/broker/wire"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/memstore"
	"github.com/strata-broker/strata/test/tmpfs"
)

// testBroker is one broker in-process, for handler tests: its Env over a
// memstore (the metadata store every handler test shares through a
// Backend, as brokers share etcd), a partition manager with its logs on
// tmpfs (tmpfs.Dir) and a group coordinator, with no network. Requests
// go through the wire encoding and the registration table, and their
// responses through the wire encoding back, so a handler sees what it
// would decode from a client and a test sees what a client would.
type testBroker struct {
	env   *Env
	store *memstore.Store
	corr  atomic.Int32 // requests may be sent from several goroutines
	// clientID is the client id of the request headers ("": handler-test).
	clientID string
	// conn is the connection requests come on (nil: none known).
	conn *Conn
	// closed: a handler asked to close the connection after its answer.
	closed atomic.Bool
}

// brokerOpts tune newTestBroker; the zero value is broker 1 with Kafka's
// defaults on a fresh backend.
type brokerOpts struct {
	id      int32             // node.id (0: 1)
	backend *memstore.Backend // shared metadata (nil: a fresh one)
	// config are broker keys, as in server.properties; log.dirs, unless
	// given, is a directory of the broker's own on tmpfs.
	config map[string]string
}

// newTestBroker starts a broker: registered in the metadata store,
// following metadata changes (partition manager and group coordinator),
// stopped at the end of the test.
func newTestBroker(t testing.TB, o brokerOpts) *testBroker {
	t.Helper()
	if o.id == 0 {
		o.id = 1
	}
	if o.backend == nil {
		o.backend = memstore.NewBackend()
	}
	kv := map[string]string{"node.id": fmt.Sprint(o.id), "metrics.listener": ""}
	maps.Copy(kv, o.config)
	if _, ok := kv["log.dirs"]; !ok {
		kv["log.dirs"] = tmpfs.Dir(t)
	}
	cfg, err := config.Parse(kv)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	store := o.backend.Open()
	t.Cleanup(func() { _ = store.Close() })
	self := metadata.Broker{ID: o.id, Host: "127.0.0.1", Port: 9092 + o.id, Rack: cfg.Rack,
		MaxPartitions: partition.BudgetFor(cfg).MaxPartitions}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reg, err := store.RegisterBroker(ctx, self, time.Duration(cfg.BrokerSessionTimeoutMs)*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	// The broker's configuration follows the dynamic broker configs, as
	// the broker's own follower does.
	live := config.NewLive(cfg)
	live.Refresh(store.Cache(), o.id)
	parts, err := partition.NewManager(live, store.Cache(), log)
	if err != nil {
		t.Fatal(err)
	}
	groups := group.New(group.ConfigFrom(cfg), log)
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{}, 3)
	go func() { live.Follow(runCtx, store.Cache(), o.id, log); done <- struct{}{} }()
	go func() { parts.Run(runCtx); done <- struct{}{} }()
	go func() { groups.Run(runCtx, o.id, store.Cache(), parts); done <- struct{}{} }()
	t.Cleanup(func() {
		stop()
		_ = groups.Close()
		<-done
		<-done
		<-done
		_ = parts.Close()
	})
	env := &Env{
		Cfg: live, Store: store, Cache: store.Cache(), Partitions: parts, Groups: groups,
		Log: log, Metrics: NewMetrics(prometheus.NewRegistry()), Self: self,
	}
	// The transaction coordinator, its markers written in process (the
	// brokers of a test have no connections to each other).
	markers := txnmarkers.New(txnmarkers.Config{NodeID: o.id, Cache: store.Cache(), Peers: noPeers{}, Local: Local{Env: env}, Log: log})
	coord := txn.New(txn.ConfigFrom(cfg), envPIDs{env}, markers, log)
	env.Txn = coord
	txnDone := make(chan struct{})
	go func() { coord.Run(runCtx, o.id, store.Cache(), parts); close(txnDone) }()
	t.Cleanup(func() {
		stop()
		_ = coord.Close()
		<-txnDone
		markers.Close()
	})
	return &testBroker{env: env, store: store}
}

// do sends req at its version and returns the response as a client
// decodes it, nil for none (acks=0). A handler's Go error fails the test:
// it means the connection would be closed.
func (b *testBroker) do(t testing.TB, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := b.try(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// send is do at version v.
func (b *testBroker) send(t testing.TB, req kmsg.Request, v int16) kmsg.Response {
	t.Helper()
	req.SetVersion(v)
	return b.do(t, req)
}

// sendAsync is send from a goroutine of its own, for requests that wait
// (JoinGroup, SyncGroup): the channel receives the response, or nil
// after reporting an error.
func (b *testBroker) sendAsync(t testing.TB, req kmsg.Request, v int16) <-chan kmsg.Response {
	req.SetVersion(v)
	ch := make(chan kmsg.Response, 1)
	go func() {
		resp, err := b.try(req)
		if err != nil {
			t.Error(err)
		}
		ch <- resp
	}()
	return ch
}

// try is do returning the handler's error (the connection would close).
// The request goes on the wire first: the handler gets what the broker
// decodes (onTheWire), not req itself.
func (b *testBroker) try(req kmsg.Request) (kmsg.Response, error) {
	name := fmt.Sprintf("%s v%d", kmsg.NameForKey(req.Key()), req.GetVersion())
	api, ok := Lookup(req.Key())
	if !ok {
		return nil, fmt.Errorf("%s: api not registered", name)
	}
	if !Supported(req.Key(), req.GetVersion()) {
		return nil, fmt.Errorf("%s: version not served (%d-%d)", name, api.Min, api.Max)
	}
	h := wire.Header{Key: req.Key(), Version: req.GetVersion(), CorrelationID: b.corr.Add(1), ClientID: cmp.Or(b.clientID, "handler-test")}
	body, err := onTheWire(h, req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := api.Fn(ctx, b.env, &Request{Header: h, Body: body, Bytes: 64, Conn: b.conn})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if res.Close {
		b.closed.Store(true)
	}
	if res.Later != nil {
		res = res.Later(ctx)
	}
	if res.Resp == nil {
		return nil, nil
	}
	f, err := wire.EncodeResponse(h.CorrelationID, res.Resp, res.Marker, res.Regions)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	resp, err := decodeFrame(req, f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return resp, nil
}

// onTheWire is req as the broker decodes it from a client: fields its
// version does not carry are at their defaults.
func onTheWire(h wire.Header, req kmsg.Request) (kmsg.Request, error) {
	return wire.DecodeBody(h, req.AppendTo(nil))
}

// decodeFrame writes f as the connection would and decodes it as a
// client: the records of file regions are read from their files.
func decodeFrame(req kmsg.Request, f *wire.Frame) (kmsg.Response, error) {
	client, server := net.Pipe()
	werr := make(chan error, 1)
	go func() {
		err := wire.WriteFrame(server, f)
		_ = server.Close()
		werr <- err
	}()
	raw, err := io.ReadAll(client)
	if err != nil {
		return nil, err
	}
	if err := <-werr; err != nil {
		return nil, err
	}
	if len(raw) < 8 || int(binary.BigEndian.Uint32(raw)) != len(raw)-4 {
		return nil, fmt.Errorf("response frame of %d bytes announces %d", len(raw), binary.BigEndian.Uint32(raw))
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	r := kbin.Reader{Src: raw[8:]}
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		kmsg.SkipTags(&r)
	}
	if err := resp.ReadFrom(r.Src); err != nil {
		return nil, fmt.Errorf("decode %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// createTopic creates a topic through CreateTopics and fails the test on
// any error code.
func (b *testBroker) createTopic(t testing.TB, name string, partitions int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp := b.do(t, req).(*kmsg.CreateTopicsResponse)
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create topic %s: error %d %v", name, code, resp.Topics[0].ErrorMessage)
	}
}

// noPeers is the Peers of a test broker: it reaches no other broker.
type noPeers struct{}

func (noPeers) Request(_ context.Context, id int32, _ kmsg.Request) (kmsg.Response, error) {
	return nil, fmt.Errorf("broker %d: test brokers have no connections", id)
}

// envPIDs allocates from the Env's allocator as it is at each call, so
// that a row replacing the Env's Store reaches the coordinator too.
type envPIDs struct{ env *Env }

func (p envPIDs) Next(ctx context.Context) (int64, error) {
	return p.env.ProducerIDAllocator().Next(ctx)
}
