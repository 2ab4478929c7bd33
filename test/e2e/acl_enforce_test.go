package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strata-broker/strata/test/harness"
)

// aclBroker starts a broker with Kafka's authorizer: a PLAINTEXT listener
// whose principal (User:ANONYMOUS) is a super user, for the test's admin
// work, and a SASL_PLAINTEXT listener with SCRAM-SHA-256 where the
// test's users authenticate; User:root is a super user too. It returns
// the broker, an admin client and the SASL listener's address.
func aclBroker(t *testing.T, extra map[string]string) (*harness.Broker, *kadm.Client, string) {
	t.Helper()
	cfg := map[string]string{
		"authorizer.class.name":                    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                              "User:ANONYMOUS;User:root",
		"offsets.topic.num.partitions":             "1",
		"group.initial.rebalance.delay.ms":         "0",
		"transaction.state.log.num.partitions":     "1",
		"transaction.state.log.replication.factor": "1",
	}
	for k, v := range extra {
		cfg[k] = v
	}
	b, addr, _ := saslBroker(t, "SASL_PLAINTEXT", "SCRAM-SHA-256", cfg)
	return b, b.Admin(), addr
}

// user is a SCRAM user of an aclBroker: its password is its name.
type user string

func (u user) principal() string { return "User:" + string(u) }

func (u user) mech() kgo.Opt {
	return kgo.SASL(scram.Auth{User: string(u), Pass: string(u) + "-pw"}.AsSha256Mechanism())
}

// client is a franz-go client of u, closed when the test ends.
func (u user) client(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	return harness.NewClient(t, addr, append([]kgo.Opt{u.mech()}, opts...)...)
}

// kcatArgs are kcat's options to connect as u.
func (u user) kcatArgs(addr string) []string {
	return []string{"-b", addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-256",
		"-X", "sasl.username=" + string(u), "-X", "sasl.password=" + string(u) + "-pw"}
}

func newUser(t *testing.T, adm *kadm.Client, name string) user {
	t.Helper()
	createScramUser(t, adm, name, name+"-pw", kadm.ScramSha256)
	return user(name)
}

// grant creates ACLs and fails the test on any error.
func grant(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(testCtx(t), b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("create ACL %+v: %v", r, r.Err)
		}
	}
}

// codeOf is the Kafka error code of err (0 for nil, -1 for one that is
// not a Kafka error).
func codeOf(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return -1
}

// awaitAllowed retries try until it answers 0: ACLs reach the broker
// through its etcd watch. It fails after 10 s, or on a code other than
// denied.
func awaitAllowed(t *testing.T, denied int16, try func() int16) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code := try()
		switch {
		case code == 0:
			return
		case code != denied:
			t.Fatalf("answered %v, want it allowed (or still %v)", kerr.ErrorForCode(code), kerr.ErrorForCode(denied))
		case time.Now().After(deadline):
			t.Fatalf("still %v 10 s after the ACLs were created", kerr.ErrorForCode(code))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// aclCase is one API family of TestACLEnforce: what the user tries on a
// resource named name (a topic, group or transactional id), the ACLs on
// acl (name itself, or a prefix of it) that allow it, and the code
// without them.
type aclCase struct {
	family string
	setup  func(t *testing.T, adm *kadm.Client, name string)
	acls   func(u user, acl string, p kadm.ACLPattern) []*kadm.ACLBuilder
	try    func(t *testing.T, u user, addr, name string) int16
	denied int16
}

// TestACLEnforce: for each API family, a SCRAM user of its own is
// refused with Kafka's code, then allowed once a LITERAL, or a PREFIXED,
// ACL grants it, over franz-go; kcat produces and consumes under ACLs;
// super.users, deny wins, allow.everyone.if.no.acl.found; Metadata hides
// the topics a user may not describe from kafka-python and `kcat -L`.
func TestACLEnforce(t *testing.T) {
	b, adm, addr := aclBroker(t, nil)
	for _, c := range aclCases(b.Addr()) {
		for _, p := range []kadm.ACLPattern{kadm.ACLPatternLiteral, kadm.ACLPatternPrefixed} {
			t.Run(c.family+"/"+strings.ToLower(p.String()), func(t *testing.T) {
				name, acl := "lit-"+c.family, "lit-"+c.family
				if p == kadm.ACLPatternPrefixed {
					name, acl = "pre-"+c.family+"-x", "pre-"+c.family+"-"
				}
				u := newUser(t, adm, "u-"+c.family+"-"+strings.ToLower(p.String()))
				if c.setup != nil {
					c.setup(t, adm, name)
				}
				if code := c.try(t, u, addr, name); code != c.denied {
					t.Fatalf("without ACLs: %v, want %v", kerr.ErrorForCode(code), kerr.ErrorForCode(c.denied))
				}
				for _, a := range c.acls(u, acl, p) {
					grant(t, adm, a)
				}
				awaitAllowed(t, c.denied, func() int16 { return c.try(t, u, addr, name) })
			})
		}
	}
	t.Run("kcat", func(t *testing.T) { aclKcat(t, adm, addr) })
	t.Run("super.users", func(t *testing.T) {
		root := newUser(t, adm, "root")
		cl := root.client(t, addr, kgo.DefaultProduceTopic("root-topic"), kgo.AllowAutoTopicCreation())
		produceSync(t, cl, &kgo.Record{Value: []byte("root")})
	})
	t.Run("deny wins", func(t *testing.T) {
		u := newUser(t, adm, "denied")
		harness.CreateTopic(t, adm, "dw-topic", 1, nil)
		grant(t, adm, kadm.NewACLs().Allow(u.principal()).Topics("dw-topic").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
		grant(t, adm, kadm.NewACLs().Deny(u.principal()).Topics("dw-").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed))
		// A topic the allow alone opens shows the ACLs are in force.
		grant(t, adm, kadm.NewACLs().Allow(u.principal()).Topics("dw2-topic").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
		harness.CreateTopic(t, adm, "dw2-topic", 1, nil)
		awaitAllowed(t, kerr.TopicAuthorizationFailed.Code, func() int16 { return tryProduce(t, u, addr, "dw2-topic") })
		if code := tryProduce(t, u, addr, "dw-topic"); code != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("allowed literally, denied by prefix: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
		}
	})
	t.Run("metadata hides", func(t *testing.T) { aclMetadataHides(t, adm, addr) })
}

// TestACLAllowEveryoneIfNoACLFound: with allow.everyone.if.no.acl.found,
// a resource without ACLs is open to every user, one with ACLs only to
// those they allow.
func TestACLAllowEveryoneIfNoACLFound(t *testing.T) {
	_, adm, addr := aclBroker(t, map[string]string{"allow.everyone.if.no.acl.found": "true"})
	alice, bob := newUser(t, adm, "alice"), newUser(t, adm, "bob")
	harness.CreateTopic(t, adm, "open", 1, nil)
	harness.CreateTopic(t, adm, "closed", 1, nil)
	grant(t, adm, kadm.NewACLs().Allow(bob.principal()).Topics("closed").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	awaitAllowed(t, kerr.TopicAuthorizationFailed.Code, func() int16 { return tryProduce(t, bob, addr, "closed") })
	if code := tryProduce(t, alice, addr, "open"); code != 0 {
		t.Fatalf("alice to a topic without ACLs: %v", kerr.ErrorForCode(code))
	}
	if code := tryProduce(t, alice, addr, "closed"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice to a topic with ACLs for bob only: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
}

// tryProduce produces one record to topic as u (not idempotent: the
// topic's own code is what comes back) and returns the code.
func tryProduce(t *testing.T, u user, addr, topic string) int16 {
	cl := u.client(t, addr, kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite(), kgo.RecordRetries(0))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return codeOf(cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr())
}

// request sends req as u to the broker itself through franz-go (no
// routing, which would need metadata the user may not see), at most at
// Kafka 3.0's versions (Fetch v12: topics by name), and returns the
// answer.
func (u user) request(t *testing.T, addr string, req kmsg.Request) kmsg.Response {
	t.Helper()
	cl := u.client(t, addr, kgo.MaxVersions(kversion.V3_0_0()))
	defer cl.Close()
	resp, err := cl.SeedBrokers()[0].Request(testCtx(t), req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// try sends req as u through franz-go, which routes it (a group's
// request to its coordinator), and returns the answer or the error.
func (u user) try(t *testing.T, addr string, req kmsg.Request) (kmsg.Response, error) {
	cl := u.client(t, addr)
	defer cl.Close()
	return cl.Request(testCtx(t), req)
}

// allowTopic is the acls of a case needing ops on the topic.
func allowTopic(ops ...kadm.ACLOperation) func(user, string, kadm.ACLPattern) []*kadm.ACLBuilder {
	return func(u user, acl string, p kadm.ACLPattern) []*kadm.ACLBuilder {
		return []*kadm.ACLBuilder{kadm.NewACLs().Allow(u.principal()).Topics(acl).Operations(ops...).ResourcePatternType(p)}
	}
}

func withTopicNamed(t *testing.T, adm *kadm.Client, name string) {
	harness.CreateTopic(t, adm, name, 1, nil)
}

// aclCases are TestACLEnforce's families; plain is the broker's
// PLAINTEXT listener, where the test's own clients are super users.
func aclCases(plain string) []aclCase {
	topicDenied := kerr.TopicAuthorizationFailed.Code
	return []aclCase{
		{family: "produce", setup: withTopicNamed, acls: allowTopic(kadm.OpWrite), denied: topicDenied,
			try: func(t *testing.T, u user, addr, name string) int16 {
				code := tryProduce(t, u, addr, name)
				if code == 0 { // an idempotent producer needs only WRITE on the topic too
					cl := u.client(t, addr, kgo.DefaultProduceTopic(name))
					defer cl.Close()
					code = codeOf(cl.ProduceSync(testCtx(t), &kgo.Record{Value: []byte("idempotent")}).FirstErr())
				}
				return code
			}},
		{family: "fetch", setup: withTopicNamed, acls: allowTopic(kadm.OpRead), denied: topicDenied,
			try: func(t *testing.T, u user, addr, name string) int16 {
				req := kmsg.NewPtrFetchRequest()
				req.Version, req.MaxWaitMillis, req.MaxBytes = 12, 10, 1<<20
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic = name
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.PartitionMaxBytes = 1 << 20
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return u.request(t, addr, req).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
			}},
		{family: "group", setup: func(t *testing.T, adm *kadm.Client, name string) {
			withTopicNamed(t, adm, name)
			produceSync(t, harness.NewClient(t, plain, kgo.DefaultProduceTopic(name)), &kgo.Record{Value: []byte("g")})
		}, denied: kerr.GroupAuthorizationFailed.Code,
			acls: func(u user, acl string, p kadm.ACLPattern) []*kadm.ACLBuilder {
				return []*kadm.ACLBuilder{kadm.NewACLs().Allow(u.principal()).Topics(acl).Groups(acl).Operations(kadm.OpRead).ResourcePatternType(p)}
			},
			try: tryGroup},
		{family: "create", acls: allowTopic(kadm.OpCreate), denied: topicDenied,
			try: func(t *testing.T, u user, addr, name string) int16 {
				adm := kadm.NewClient(u.client(t, addr))
				defer adm.Close()
				r, err := adm.CreateTopic(testCtx(t), 1, 1, nil, name)
				if err != nil {
					return codeOf(err)
				}
				return codeOf(r.Err)
			}},
		{family: "delete", setup: withTopicNamed, acls: allowTopic(kadm.OpDelete), denied: topicDenied,
			try: func(t *testing.T, u user, addr, name string) int16 {
				adm := kadm.NewClient(u.client(t, addr))
				defer adm.Close()
				r, err := adm.DeleteTopics(testCtx(t), name)
				if err != nil {
					return codeOf(err)
				}
				return codeOf(r[name].Err)
			}},
		{family: "describeconfigs", setup: withTopicNamed, acls: allowTopic(kadm.OpDescribeConfigs), denied: topicDenied,
			try: func(t *testing.T, u user, addr, name string) int16 {
				adm := kadm.NewClient(u.client(t, addr))
				defer adm.Close()
				rc, err := adm.DescribeTopicConfigs(testCtx(t), name)
				if err != nil {
					return codeOf(err)
				}
				return codeOf(rc[0].Err)
			}},
		{family: "alterconfigs", setup: withTopicNamed, acls: allowTopic(kadm.OpAlterConfigs), denied: topicDenied,
			try: func(t *testing.T, u user, addr, name string) int16 {
				adm := kadm.NewClient(u.client(t, addr))
				defer adm.Close()
				rs, err := adm.AlterTopicConfigs(testCtx(t), []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("600000")}}, name)
				if err != nil {
					return codeOf(err)
				}
				return codeOf(rs[0].Err)
			}},
		{family: "txn", setup: withTopicNamed, denied: kerr.TransactionalIDAuthorizationFailed.Code,
			acls: func(u user, acl string, p kadm.ACLPattern) []*kadm.ACLBuilder {
				return []*kadm.ACLBuilder{kadm.NewACLs().Allow(u.principal()).Topics(acl).TransactionalIDs(acl).Operations(kadm.OpWrite).ResourcePatternType(p)}
			},
			try: tryTxn},
		{family: "clusteraction", setup: withTopicNamed, denied: kerr.ClusterAuthorizationFailed.Code,
			acls: func(u user, _ string, p kadm.ACLPattern) []*kadm.ACLBuilder {
				// The cluster's one name, kafka-cluster, either way: Kafka
				// takes no other for the cluster resource.
				return []*kadm.ACLBuilder{kadm.NewACLs().Allow(u.principal()).Clusters().Operations(kadm.OpClusterAction).ResourcePatternType(p)}
			},
			try: func(t *testing.T, u user, addr, name string) int16 {
				// The marker a transaction coordinator writes: brokers only.
				req := kmsg.NewPtrWriteTxnMarkersRequest()
				m := kmsg.NewWriteTxnMarkersRequestMarker()
				m.ProducerID, m.ProducerEpoch = 4242, 0
				mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				mt.Topic, mt.Partitions = name, []int32{0}
				m.Topics = append(m.Topics, mt)
				req.Markers = append(req.Markers, m)
				return u.request(t, addr, req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
			}},
	}
}

// tryGroup commits an offset of the group name (an OffsetCommit by name,
// which franz-go sends to the group's coordinator: kadm would first need
// to describe the topic), then joins it with a franz-go group consumer of
// the topic name and commits what it consumed.
func tryGroup(t *testing.T, u user, addr, name string) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 9, name, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = name
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := u.try(t, addr, req)
	if err != nil {
		return codeOf(err)
	}
	if code := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		return code
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := u.client(t, addr, kgo.ConsumerGroup(name), kgo.ConsumeTopics(name), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("group consumer: %v", err)
		}
		if fs.NumRecords() > 0 {
			break
		}
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("group commit: %v", err)
	}
	return 0
}

// tryTxn runs a transaction of transactional id name producing to the
// topic name.
func tryTxn(t *testing.T, u user, addr, name string) int16 {
	cl := u.client(t, addr, kgo.TransactionalID(name), kgo.DefaultProduceTopic(name), kgo.RecordRetries(0))
	defer cl.Close()
	ctx := testCtx(t)
	if err := cl.BeginTransaction(); err != nil {
		return codeOf(err) // a producer id franz-go could not get
	}
	err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("txn")}).FirstErr()
	end := kgo.TryCommit
	if err != nil {
		end = kgo.TryAbort
	}
	if eerr := cl.EndTransaction(ctx, end); err == nil {
		err = eerr
	}
	return codeOf(err)
}

// aclKcat: kcat as a user is refused, then produces once a LITERAL ACL
// allows WRITE and consumes once a PREFIXED one allows READ.
func aclKcat(t *testing.T, adm *kadm.Client, addr string) {
	u := newUser(t, adm, "kc")
	harness.CreateTopic(t, adm, "kcat-acl", 1, nil)
	produce := func() error {
		return runKcat("line\n", append(u.kcatArgs(addr), "-P", "-t", "kcat-acl")...)
	}
	if err := produce(); err == nil {
		t.Fatal("kcat produced without an ACL")
	}
	grant(t, adm, kadm.NewACLs().Allow(u.principal()).Topics("kcat-acl").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral))
	waitUntil(t, "kcat to produce once WRITE is allowed", 10*time.Second, func() bool { return produce() == nil })
	consume := func() (string, error) {
		out, err := kcatOutput(append(u.kcatArgs(addr), "-C", "-t", "kcat-acl", "-o", "beginning", "-e", "-q")...)
		return out, err
	}
	if _, err := consume(); err == nil {
		t.Fatal("kcat consumed without an ACL")
	}
	grant(t, adm, kadm.NewACLs().Allow(u.principal()).Topics("kcat-").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed))
	waitUntil(t, "kcat to consume the line once READ is allowed", 10*time.Second, func() bool {
		out, err := consume()
		return err == nil && strings.Contains(out, "line")
	})
}

// runKcat runs kcat with stdin in and returns its error (with its
// output), or an error if its output reports one.
func runKcat(in string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stdout, stderr, err := harness.RunKcat(ctx, in, args...)
	out := stdout + stderr
	if err != nil {
		return errors.New(err.Error() + ": " + out)
	}
	if strings.Contains(out, "authorization failed") || strings.Contains(out, "ERROR") {
		return errors.New(out)
	}
	return nil
}

// kcatOutput runs kcat and returns its standard output, or an error if
// it fails or its stderr reports one.
func kcatOutput(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, stderr, err := harness.RunKcat(ctx, "", args...)
	if err == nil && strings.Contains(stderr, "ERROR") {
		err = errors.New(stderr)
	}
	return out, err
}

// listTopicsPython lists the topics kafka-python's consumer sees, as JSON.
const listTopicsPython = `
import json, sys
from kafka import KafkaConsumer
addr, user = sys.argv[1], sys.argv[2]
c = KafkaConsumer(bootstrap_servers=addr, security_protocol='SASL_PLAINTEXT', sasl_mechanism='SCRAM-SHA-256',
                  sasl_plain_username=user, sasl_plain_password=user + '-pw', api_version_auto_timeout_ms=10000)
print(json.dumps(sorted(c.topics())))
c.close()
`

// aclMetadataHides: a user allowed to DESCRIBE one of two topics sees
// only it, in kafka-python's topic list and in `kcat -L`.
func aclMetadataHides(t *testing.T, adm *kadm.Client, addr string) {
	u := newUser(t, adm, "viewer")
	harness.CreateTopic(t, adm, "vis-shown", 1, nil)
	harness.CreateTopic(t, adm, "vis-hidden", 1, nil)
	grant(t, adm, kadm.NewACLs().Allow(u.principal()).Topics("vis-shown").Operations(kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral))
	var topics []string
	waitUntil(t, "kafka-python to see vis-shown once DESCRIBE is allowed", 10*time.Second, func() bool {
		out := harness.Python(t, listTopicsPython, addr, string(u))
		if err := json.Unmarshal([]byte(out), &topics); err != nil {
			t.Fatalf("kafka-python output %q: %v", out, err)
		}
		return slices.Contains(topics, "vis-shown")
	})
	if !slices.Equal(topics, []string{"vis-shown"}) {
		t.Fatalf("kafka-python sees %v, want only vis-shown", topics)
	}
	out := harness.Kcat(t, append(u.kcatArgs(addr), "-L")...)
	if !strings.Contains(out, `topic "vis-shown"`) || strings.Contains(out, "vis-hidden") || strings.Contains(out, "__consumer_offsets") {
		t.Fatalf("kcat -L shows:\n%s\nwant vis-shown only", out)
	}
}
