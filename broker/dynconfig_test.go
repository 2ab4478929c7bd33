package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterBroker sends IncrementalAlterConfigs SETs (key, value pairs) for
// broker resource name on k and fails the test on an error code.
func alterBroker(t *testing.T, k *kconn, name string, kv ...string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = kv[i], kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(kv[i+1])
		rr.Configs = append(rr.Configs, c)
	}
	req.Resources = append(req.Resources, rr)
	k.send(req)
	resp, err := k.recv(runTimeout)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	if r := resp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; r.ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs %v: error %d %v", kv, r.ErrorCode, r.ErrorMessage)
	}
}

// TestDynamicConfigsAppliedLive: dynamic broker configs changed through
// the Kafka API reach the running parts: the accept loop's connection
// limits (a connection waiting on max.connections is accepted once it
// grows; max.connections.per.ip closes the next one from an address) and
// the replica fetcher's count.
func TestDynamicConfigsAppliedLive(t *testing.T) {
	r := serve(t, map[string]string{"max.connections": "1"}, nil)
	addr := r.s.Addr()
	admin := dial(t, addr, "127.0.0.1")
	admin.ping()
	waiting := dial(t, addr, "127.0.0.1") // held in the kernel's backlog
	waiting.send(pingRequest())
	if _, err := waiting.recv(300 * time.Millisecond); !isTimeout(err) {
		t.Fatalf("second connection over max.connections=1: %v, want no answer", err)
	}

	alterBroker(t, admin, "", "max.connections", "3")
	if _, err := waiting.recv(runTimeout); err != nil {
		t.Fatalf("the waiting connection after max.connections grew: %v", err)
	}

	alterBroker(t, admin, "1", "max.connections.per.ip", "2", "num.replica.fetchers", "2")
	// The accept loop's limits follow the live configuration on their own
	// goroutine, after the answer.
	q := r.s.node.clients.quotas
	waitFor(t, "the per-address limit to follow", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.perIP == 2
	})
	dial(t, addr, "127.0.0.1").closedByPeer()
	dial(t, addr, "127.0.0.2").ping()
	waitFor(t, "the fetcher count to follow", func() bool { return r.s.node.fetcher.Fetchers() == 2 })
}
