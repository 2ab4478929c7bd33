package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// TestTransactionsFromPeerFollowACLs: a transaction coordinated by
// another broker, which answers the console's broker rather than the
// user, still shows only the partitions of topics the user may describe.
func TestTransactionsFromPeerFollowACLs(t *testing.T) {
	etcd := harness.StartEtcd(t)
	s, _ := secureSite(t, "node.id", "1", "metadata.etcd.endpoints", etcd.Endpoint())
	harness.Start(t, map[string]string{"node.id": "2", "metadata.etcd.endpoints": etcd.Endpoint(),
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "super.users": "User:ANONYMOUS"})
	adm := s.b.Admin()
	harness.CreateTopic(t, adm, "ledger", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	id := ""
	for i := range 64 {
		cand := fmt.Sprintf("txn-%d", i)
		co := adm.FindTxnCoordinators(ctx, cand)
		if c, ok := co[cand]; ok && c.Err == nil && c.NodeID == 2 {
			id = cand
			break
		}
	}
	if id == "" {
		t.Fatal("no transactional id of 64 is coordinated by broker 2")
	}
	cl := s.b.Client(kgo.TransactionalID(id), kgo.DefaultProduceTopic("ledger"))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(t, cl, &kgo.Record{Value: []byte("v")})
	allow(t, s, kadm.NewACLs().TransactionalIDs(id).Operations(kadm.OpDescribe))
	body := s.must("/transactions", id, "Ongoing")
	if strings.Contains(body, "ledger-0") {
		t.Fatalf("a partition of a topic alice may not describe is shown:\n%s", body)
	}
	allow(t, s, kadm.NewACLs().Topics("ledger").Operations(kadm.OpDescribe))
	s.must("/transactions", id, "ledger-0")
}
