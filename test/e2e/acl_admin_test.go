package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strata-broker/strata/test/harness"
)

// aclBrokerConfig turns on the authorizer under its Kafka name, with the
// PLAINTEXT listener's principal (User:ANONYMOUS: the tests' setup and
// the brokers' own connections) and User:admin as super users.
func aclBrokerConfig() map[string]string {
	return map[string]string{
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":           "User:ANONYMOUS;User:admin",
	}
}

// scramAdmin is a kadm client of user over SCRAM-SHA-256 on addr.
func scramAdmin(t *testing.T, addr, user, pass string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(harness.NewClient(t, addr, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism())))
}

// describeAll lists every ACL through adm as "TYPE PATTERN name principal host OP PERM" lines, sorted.
func describeAll(ctx context.Context, adm *kadm.Client) ([]string, error) {
	b := kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Operations(kadm.OpAny).Allow().AllowHosts().Deny().DenyHosts()
	res, err := adm.DescribeACLs(ctx, b)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range res {
		if r.Err != nil {
			return nil, r.Err
		}
		for _, d := range r.Described {
			out = append(out, fmt.Sprintf("%s %s %s %s %s %s %s", d.Type, d.Pattern, d.Name, d.Principal, d.Host, d.Operation, d.Permission))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// TestACLAdminKadm: kadm's CreateACLs, DescribeACLs and DeleteACLs over
// SCRAM: a user without ALTER on the cluster is refused; a super user
// creates LITERAL and PREFIXED ACLs, among them ALTER on the cluster for
// alice, who may then describe (ALTER implies DESCRIBE) and delete them.
func TestACLAdminKadm(t *testing.T) {
	b, addr, _ := saslBroker(t, "SASL_PLAINTEXT", "SCRAM-SHA-256", aclBrokerConfig())
	createScramUser(t, b.Admin(), "admin", "admin-pw", kadm.ScramSha256)
	createScramUser(t, b.Admin(), "alice", "alice-pw", kadm.ScramSha256)
	admin, alice := scramAdmin(t, addr, "admin", "admin-pw"), scramAdmin(t, addr, "alice", "alice-pw")
	ctx := testCtx(t)

	clusterAlter := kadm.NewACLs().Clusters().Operations(kadm.OpAlter).Allow("User:alice")
	res, err := alice.CreateACLs(ctx, clusterAlter)
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice creating without ALTER on the cluster: %v %+v", err, res)
	}
	if _, err := describeAll(ctx, alice); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alice describing without DESCRIBE on the cluster: %v", err)
	}

	for _, bld := range []*kadm.ACLBuilder{
		clusterAlter,
		kadm.NewACLs().Topics("orders").Operations(kadm.OpRead, kadm.OpDescribe).Allow("User:alice"),
		kadm.NewACLs().Topics("pay-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite).Deny("User:bob").DenyHosts("127.0.0.1"),
		kadm.NewACLs().Groups("g1").Operations(kadm.OpRead).Allow("User:*"),
	} {
		grant(t, admin, bld)
	}
	want := []string{
		"CLUSTER LITERAL kafka-cluster User:alice * ALTER ALLOW",
		"GROUP LITERAL g1 User:* * READ ALLOW",
		"TOPIC LITERAL orders User:alice * DESCRIBE ALLOW",
		"TOPIC LITERAL orders User:alice * READ ALLOW",
		"TOPIC PREFIXED pay- User:bob 127.0.0.1 WRITE DENY",
	}
	got, err := describeAll(ctx, alice)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("alice describes %q, %v\nwant %q", got, err, want)
	}

	// MATCH: what applies to topic pay-in.
	mres, err := alice.DescribeACLs(ctx, kadm.NewACLs().Topics("pay-in").ResourcePatternType(kadm.ACLPatternMatch).
		Operations(kadm.OpAny).Allow().AllowHosts().Deny().DenyHosts())
	if err != nil || len(mres) == 0 || mres[0].Err != nil {
		t.Fatalf("describe MATCH: %v %+v", err, mres)
	}
	var matched []string
	for _, r := range mres {
		for _, d := range r.Described {
			matched = append(matched, d.Name+" "+d.Pattern.String())
		}
	}
	if slices.Sort(matched); !slices.Equal(slices.Compact(matched), []string{"pay- PREFIXED"}) {
		t.Fatalf("MATCH pay-in: %q", matched)
	}

	dres, err := alice.DeleteACLs(ctx, kadm.NewACLs().Topics("orders").Operations(kadm.OpAny).Allow().AllowHosts().Deny().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	var deleted int
	for _, r := range dres {
		if r.Err != nil {
			t.Fatalf("delete: %v", r.Err)
		}
		deleted += len(r.Deleted)
	}
	if deleted != 2 {
		t.Fatalf("deleted %d ACLs, want 2: %+v", deleted, dres)
	}
	if got, err := describeAll(ctx, admin); err != nil || len(got) != 3 || strings.Contains(strings.Join(got, "\n"), "orders") {
		t.Fatalf("after delete: %q %v", got, err)
	}
}

// TestACLAdminSarama: sarama's ClusterAdmin CreateACL, ListAcls and
// DeleteACL, as the super user admin over SASL PLAIN; without an
// authorizer the same calls get SECURITY_DISABLED.
func TestACLAdminSarama(t *testing.T) {
	_, addr, _ := saslBroker(t, "SASL_PLAINTEXT", "PLAIN", aclBrokerConfig())
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.Net.SASL.Enable, cfg.Net.SASL.Mechanism = true, sarama.SASLTypePlaintext
	cfg.Net.SASL.User, cfg.Net.SASL.Password = "admin", "admin-secret"
	adm, err := sarama.NewClusterAdmin([]string{addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = adm.Close() })

	lit := sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: "events", ResourcePatternType: sarama.AclPatternLiteral}
	pre := sarama.Resource{ResourceType: sarama.AclResourceGroup, ResourceName: "etl-", ResourcePatternType: sarama.AclPatternPrefixed}
	read := sarama.Acl{Principal: "User:carol", Host: "*", Operation: sarama.AclOperationRead, PermissionType: sarama.AclPermissionAllow}
	deny := sarama.Acl{Principal: "User:dave", Host: "*", Operation: sarama.AclOperationAll, PermissionType: sarama.AclPermissionDeny}
	if err := adm.CreateACLs([]*sarama.ResourceAcls{{Resource: lit, Acls: []*sarama.Acl{&read}}, {Resource: pre, Acls: []*sarama.Acl{&deny}}}); err != nil {
		t.Fatalf("create: %v", err)
	}
	list, err := adm.ListAcls(sarama.AclFilter{ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range list {
		for _, a := range r.Acls {
			got = append(got, fmt.Sprintf("%s %d %s %d", r.ResourceName, r.ResourcePatternType, a.Principal, a.PermissionType))
		}
	}
	if want := []string{"events 3 User:carol 3", "etl- 4 User:dave 2"}; !slices.Equal(got, want) {
		t.Fatalf("listed %q, want %q", got, want)
	}
	name := "etl-"
	matches, err := adm.DeleteACL(sarama.AclFilter{ResourceType: sarama.AclResourceGroup, ResourceName: &name, ResourcePatternTypeFilter: sarama.AclPatternPrefixed,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny}, false)
	if err != nil || len(matches) != 1 || matches[0].Principal != "User:dave" {
		t.Fatalf("delete: %v %+v", err, matches)
	}

	// No authorizer: SECURITY_DISABLED.
	plain := harness.Start(t, nil)
	adm2 := saramaAdmin(t, plain.Addr())
	if err := adm2.CreateACLs([]*sarama.ResourceAcls{{Resource: lit, Acls: []*sarama.Acl{&read}}}); err == nil || !strings.Contains(err.Error(), "ecurity") {
		t.Fatalf("create without an authorizer: %v", err)
	}
}

// TestACLAcrossBrokers: an ACL created through broker 1 of three is
// enforced by brokers 2 and 3 (they watch etcd): alice, refused
// DescribeAcls on every broker, may describe on all three once broker 1
// stored ALTER on the cluster for her. Each broker is polled with a
// bounded wait; the test logs how long the others took.
func TestACLAcrossBrokers(t *testing.T) {
	extra := aclBrokerConfig()
	extra["listeners"] = "PLAINTEXT://127.0.0.1:0,SASL://127.0.0.1:0"
	extra["listener.security.protocol.map"] = "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT"
	extra["inter.broker.listener.name"] = "PLAINTEXT"
	extra["sasl.enabled.mechanisms"] = "SCRAM-SHA-256"
	bs := startCluster(t, 3, extra)
	createScramUser(t, bs[0].Admin(), "alice", "alice-pw", kadm.ScramSha256)
	var alices []*kadm.Client
	for _, b := range bs {
		alices = append(alices, scramAdmin(t, b.Server().ListenerAddr("SASL"), "alice", "alice-pw"))
	}
	// SCRAM credentials reach every broker through the same watch.
	for i, adm := range alices {
		waitUntil(t, fmt.Sprintf("alice refused on broker %d", i+1), 20*time.Second, func() bool {
			_, err := describeAll(testCtx(t), adm)
			return errors.Is(err, kerr.ClusterAuthorizationFailed)
		})
	}
	grant(t, bs[0].Admin(), kadm.NewACLs().Clusters().Operations(kadm.OpAlter).Allow("User:alice"))
	created := time.Now()
	for i, adm := range alices {
		waitUntil(t, fmt.Sprintf("broker %d to enforce the ACL", i+1), 10*time.Second, func() bool {
			got, err := describeAll(testCtx(t), adm)
			return err == nil && len(got) == 1
		})
		t.Logf("broker %d enforces the ACL %v after broker 1 stored it", i+1, time.Since(created).Round(time.Millisecond))
	}
	if d := time.Since(created); d > 2*time.Second {
		t.Errorf("the ACL took %v to reach all three brokers; want about a second at most", d)
	}
}
