package handler

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
	"github.com/strata-broker/strata/metadata/memstore"
)

// TestAnswersPerListener: Metadata and DescribeCluster give each client
// the brokers' endpoints of the listener its connection came in on; a
// broker without that listener is left out, and a partition it leads has
// no leader (LISTENER_NOT_FOUND from v6, LEADER_NOT_AVAILABLE before), as
// in Kafka. A request without a listener (none known) gets Host and Port.
func TestAnswersPerListener(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := memstore.New()
	t.Cleanup(func() { _ = s.Close() })
	for _, b := range []metadata.Broker{
		{ID: 1, Host: "10.0.0.1", Port: 9092, Endpoints: []metadata.Endpoint{
			{Listener: "INTERNAL", Host: "10.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"},
			{Listener: "CLIENT", Host: "kafka1.example.com", Port: 9093, SecurityProtocol: "SSL"},
		}},
		{ID: 2, Host: "10.0.0.2", Port: 9092, Endpoints: []metadata.Endpoint{
			{Listener: "INTERNAL", Host: "10.0.0.2", Port: 9092, SecurityProtocol: "PLAINTEXT"},
		}},
	} {
		if _, err := s.RegisterBroker(ctx, b, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	tp := metadata.Topic{Name: "t", Partitions: map[int32]metadata.PartitionState{
		0: {Replicas: []int32{1, 2}, Leader: 1, ISR: []int32{1, 2}},
		1: {Replicas: []int32{2, 1}, Leader: 2, ISR: []int32{2, 1}},
	}}
	rev, err := s.CreateTopic(ctx, tp)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Cache().WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	env := &Env{Cfg: config.NewLive(config.Default()), Store: s, Cache: s.Cache(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))}

	metadataFor := func(listener string, version int16) *kmsg.MetadataResponse {
		t.Helper()
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(version)
		res, err := handleMetadata(ctx, env, &Request{Body: req, Conn: &Conn{Listener: listener}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Resp.(*kmsg.MetadataResponse)
	}
	for _, v := range []int16{5, 12} {
		resp := metadataFor("CLIENT", v)
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 1 || resp.Brokers[0].Host != "kafka1.example.com" || resp.Brokers[0].Port != 9093 {
			t.Fatalf("v%d CLIENT brokers %+v", v, resp.Brokers)
		}
		ps := resp.Topics[0].Partitions
		if ps[0].Leader != 1 || ps[0].ErrorCode != 0 {
			t.Errorf("v%d partition 0: leader %d error %d", v, ps[0].Leader, ps[0].ErrorCode)
		}
		want := kerr.ListenerNotFound.Code
		if v < 6 {
			want = kerr.LeaderNotAvailable.Code
		}
		if ps[1].Leader != -1 || ps[1].ErrorCode != want {
			t.Errorf("v%d partition 1 led by a broker without CLIENT: leader %d error %d, want -1 and %d", v, ps[1].Leader, ps[1].ErrorCode, want)
		}
	}
	resp := metadataFor("INTERNAL", 12)
	if len(resp.Brokers) != 2 || resp.Brokers[0].Host != "10.0.0.1" || resp.Brokers[1].Host != "10.0.0.2" {
		t.Fatalf("INTERNAL brokers %+v", resp.Brokers)
	}
	resp = metadataFor("", 12)
	if len(resp.Brokers) != 2 || resp.Brokers[0].Port != 9092 {
		t.Fatalf("no listener: brokers %+v", resp.Brokers)
	}

	dc := kmsg.NewPtrDescribeClusterRequest()
	res, err := handleDescribeCluster(ctx, env, &Request{Body: dc, Conn: &Conn{Listener: "CLIENT"}})
	if err != nil {
		t.Fatal(err)
	}
	if bs := res.Resp.(*kmsg.DescribeClusterResponse).Brokers; len(bs) != 1 || bs[0].Host != "kafka1.example.com" || bs[0].Port != 9093 {
		t.Fatalf("DescribeCluster on CLIENT: %+v", bs)
	}
}

// TestSelfBrokerEndpoints: the registration carries one endpoint per
// advertised listener, bound ports for port 0 and the bound host for a
// wildcard one; Host and Port are the inter-broker listener's.
func TestSelfBrokerEndpoints(t *testing.T) {
	cfg, err := config.Parse(map[string]string{
		"listeners":                      "CLIENT://0.0.0.0:0,INTERNAL://127.0.0.1:0,HIDDEN://127.0.0.1:0",
		"advertised.listeners":           "CLIENT://kafka1.example.com:0,INTERNAL://:0",
		"listener.security.protocol.map": "CLIENT:SSL,INTERNAL:PLAINTEXT,HIDDEN:PLAINTEXT",
		"inter.broker.listener.name":     "INTERNAL",
		"node.id":                        "3",
	})
	if err != nil {
		t.Fatal(err)
	}
	b := SelfBroker(cfg, map[string]string{"CLIENT": "0.0.0.0:40001", "INTERNAL": "127.0.0.1:40002", "HIDDEN": "127.0.0.1:40003"})
	want := []metadata.Endpoint{
		{Listener: "CLIENT", Host: "kafka1.example.com", Port: 40001, SecurityProtocol: "SSL"},
		{Listener: "INTERNAL", Host: "127.0.0.1", Port: 40002, SecurityProtocol: "PLAINTEXT"},
	}
	if b.ID != 3 || b.Host != "127.0.0.1" || b.Port != 40002 || len(b.Endpoints) != 2 || b.Endpoints[0] != want[0] || b.Endpoints[1] != want[1] {
		t.Fatalf("self %+v", b)
	}
}
