package handler

import (
	"context"
	"net/netip"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/wire"
)

// BenchmarkProduceAuthorization is one produce of a one-record batch
// (acks=1, the handler called directly) without an authorizer, where the
// checks must cost nothing, and with one allowing it.
func BenchmarkProduceAuthorization(b *testing.B) {
	tb := newTestBroker(b, brokerOpts{})
	tb.createTopic(b, "t", 1, nil)
	conn := &Conn{Principal: testPrincipal, Host: netip.MustParseAddr("127.0.0.1")}
	for _, c := range []struct {
		name string
		auth Authorizer
	}{
		{"none", nil},
		{"allowed", allowSet{{aclWrite, resTopic, "t"}: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			tb.env.Authorizer = c.auth
			r := benchProduce()
			req := &Request{Header: wire.Header{Key: r.Key(), Version: r.Version, ClientID: "bench"}, Body: r, Conn: conn}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := handleProduce(ctx, tb.env, req)
				if err != nil || res.Resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 0 {
					b.Fatalf("produce: %v %+v", err, res.Resp)
				}
			}
		})
	}
	tb.env.Authorizer = nil
}

// TestAuthorizationFreeWithoutAuthorizer: without an authorizer the
// checks allocate nothing (on a bare Env: no goroutine of a broker
// allocates meanwhile).
func TestAuthorizationFreeWithoutAuthorizer(t *testing.T) {
	env := &Env{}
	req := &Request{Body: benchProduce(), Conn: &Conn{Principal: testPrincipal}}
	if n := testing.AllocsPerRun(100, func() {
		_ = env.allowedTopic(req, aclWrite, "t")
		_ = env.allowedTxnID(req, aclWrite, "tx")
		_ = env.allowedCluster(req, aclIdempotentWrite)
		_ = env.allowedAnyOfType(req, aclWrite, resTopic)
	}); n != 0 {
		t.Errorf("checks without an authorizer: %v allocations, want 0", n)
	}
}

// benchProduce is a v9 produce of one record to t-0 with acks=1.
func benchProduce() *kmsg.ProduceRequest {
	r := kmsg.NewPtrProduceRequest()
	r.SetVersion(9)
	r.Acks, r.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch("v")
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}
