package broker

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/broker/handler"
	"github.com/strata-broker/strata/broker/wire"
	"github.com/strata-broker/strata/config"
	"github.com/strata-broker/strata/metadata"
)

// TestThrottleKinds: a Produce counts its request bytes, a consumer's
// Fetch its response's record bytes, a follower's Fetch nothing, and a
// handler's time counts against request_percentage (not ApiVersions'); the
// longest throttle is set in the response.
func TestThrottleKinds(t *testing.T) {
	cfg, err := config.Parse(map[string]string{"quota.window.num": "2"})
	if err != nil {
		t.Fatal(err)
	}
	cache := metadata.NewCache()
	cache.Apply(1, []metadata.Change{{Kind: metadata.ChangeClientQuotas, Quota: metadata.QuotaEntity{User: metadata.QuotaDefault},
		Quotas: map[string]float64{"producer_byte_rate": 100, "consumer_byte_rate": 100, "request_percentage": 1}}})
	m := newQuotas(cfg, cache, prometheus.NewRegistry())
	conn := &handler.Conn{Principal: "User:alice"}
	req := func(body kmsg.Request, bytes int) *handler.Request {
		return &handler.Request{Header: wire.Header{Key: body.Key(), ClientID: "app"}, Body: body, Bytes: bytes, Conn: conn}
	}
	produce, _ := handler.Lookup(kmsg.Produce.Int16())
	fetch, _ := handler.Lookup(kmsg.Fetch.Int16())
	versions, _ := handler.Lookup(kmsg.ApiVersions.Int16())

	pr := &kmsg.ProduceResponse{Version: 9}
	if d, after := throttle(m, produce, req(&kmsg.ProduceRequest{Version: 9}, 300), handler.Result{Resp: pr}, 0); d != 2*time.Second || !after || pr.ThrottleMillis != 2000 {
		t.Fatalf("produce of 300 bytes at 100 B/s over 1 s: throttle %v (after %v), response says %d ms", d, after, pr.ThrottleMillis)
	}
	follower := &kmsg.FetchRequest{Version: 12, ReplicaID: 2}
	big := &kmsg.FetchResponse{Version: 12, Topics: []kmsg.FetchResponseTopic{{Partitions: []kmsg.FetchResponseTopicPartition{{RecordBatches: make([]byte, 1000)}}}}}
	if d, _ := throttle(m, fetch, req(follower, 50), handler.Result{Resp: big}, 0); d != 0 {
		t.Fatalf("a follower's fetch throttled %v", d)
	}
	consumer := &kmsg.FetchRequest{Version: 12, ReplicaID: -1, ReplicaState: kmsg.FetchRequestReplicaState{ID: -1}}
	if d, _ := throttle(m, fetch, req(consumer, 50), handler.Result{Resp: big}, 0); d != 9*time.Second {
		t.Fatalf("a consumer's fetch of 1000 bytes at 100 B/s over 1 s: throttle %v", d)
	}
	vr := &kmsg.ApiVersionsResponse{Version: 3}
	if d, _ := throttle(m, versions, req(&kmsg.ApiVersionsRequest{Version: 3}, 50), handler.Result{Resp: vr}, time.Second); d != 0 {
		t.Fatalf("ApiVersions counted against request_percentage: %v", d)
	}
	// 20 ms of handling is 2 percent-seconds against 1 %/s: throttled,
	// at most one window.
	md, _ := handler.Lookup(kmsg.Metadata.Int16())
	if d, _ := throttle(m, md, req(&kmsg.MetadataRequest{Version: 12}, 0), handler.Result{Resp: &kmsg.MetadataResponse{Version: 12}}, 20*time.Millisecond); d <= 0 || d > time.Second {
		t.Fatalf("request time: throttle %v", d)
	}
	if d, _ := throttle(nil, produce, req(&kmsg.ProduceRequest{Version: 9}, 1e9), handler.Result{Resp: pr}, 0); d != 0 {
		t.Fatalf("no manager: throttle %v", d)
	}
}
