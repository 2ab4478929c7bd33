package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestExternalEtcd runs the broker against a real etcd server (Debian's
// etcd 3.4) instead of the embedded one: topics are written there under
// the configured prefix, and a restarted broker finds every topic and
// record again.
func TestExternalEtcd(t *testing.T) {
	etcd := harness.StartEtcd(t)
	b := harness.Start(t, map[string]string{
		"metadata.etcd.endpoints": etcd.Endpoint(),
		"metadata.etcd.prefix":    "/e2e-strata",
	})
	harness.CreateTopic(t, b.Admin(), "ext-etcd", 2, map[string]string{"retention.ms": "3600000"})
	cl := b.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 200 {
		r := &kgo.Record{Topic: "ext-etcd", Partition: int32(i % 2), Value: fmt.Appendf(nil, "v%d", i)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	cl.Close()

	ec, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.Endpoint()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	resp, err := ec.Get(ctx, "/e2e-strata/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, kv := range resp.Kvs {
		keys[string(kv.Key)] = true
	}
	if len(keys) == 0 {
		t.Fatal("nothing written under the prefix in the external etcd")
	}
	t.Logf("etcd holds %d keys under /e2e-strata/", len(keys))

	b.Restart()
	got := harness.ReadAll(t, b.Addr(), "ext-etcd")
	if n := len(got[0]) + len(got[1]); n != 200 {
		t.Fatalf("after restart read %d records, want 200", n)
	}
	if c := overrides(t, b.Admin(), "ext-etcd"); c["retention.ms"] != "3600000" {
		t.Fatalf("topic config lost: %v", c)
	}
}
