package handler

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/metadata"
)

// groupOperations is the AuthorizedOperations bit field of a group
// without an authorizer: READ (3), DELETE (6) and DESCRIBE (8).
const groupOperations = 1<<3 | 1<<6 | 1<<8

// testPrincipal is the principal of TestAuthorization's connection.
const testPrincipal = "User:alice"

// grant is an operation on a resource, as the test authorizer allows it.
type grant struct {
	op   kmsg.ACLOperation
	typ  kmsg.ACLResourceType
	name string
}

func (g grant) String() string {
	return fmt.Sprintf("%s %s:%s", strings.ToUpper(g.op.String()), strings.ToUpper(g.typ.String()), g.name)
}

// allowSet is TestAuthorization's Authorizer, the seam acl-core's ACL
// authorizer plugs into: it allows testPrincipal exactly its grants. It
// answers by resource type too (an idempotent producer's WRITE on any
// topic).
type allowSet map[grant]bool

func (a allowSet) Authorize(x Action) bool {
	return x.Principal == testPrincipal && a[grant{x.Op, x.Type, x.Name}]
}

func (a allowSet) AuthorizeAny(principal string, _ netip.Addr, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	for g := range a {
		if principal == testPrincipal && g.op == op && g.typ == typ {
			return true
		}
	}
	return false
}

// allowSet keeps no ACLs: its ACLAdmin side, which the ACL APIs need
// before they check, stores nothing.
func (allowSet) ACLs() []metadata.ACL                             { return nil }
func (allowSet) CreateACLs(context.Context, []metadata.ACL) error { return nil }
func (allowSet) DeleteACLs(context.Context, []metadata.ACL) error { return nil }

// need is an action a request needs, and the code its answer carries
// without it (0: the row's denied check tells instead).
type need struct {
	grant
	code int16
}

// Needs by resource type.
func topicNeed(op kmsg.ACLOperation, name string, code int16) need {
	return need{grant{op, resTopic, name}, code}
}

func groupNeed(op kmsg.ACLOperation, name string, code int16) need {
	return need{grant{op, resGroup, name}, code}
}

func clusterNeed(op kmsg.ACLOperation, code int16) need {
	return need{grant{op, resCluster, clusterResource}, code}
}

func txnNeed(op kmsg.ACLOperation, id string, code int16) need {
	return need{grant{op, resTxnID, id}, code}
}

// Authorization codes, by short names.
var (
	topicDenied   = kerr.TopicAuthorizationFailed.Code
	groupDenied   = kerr.GroupAuthorizationFailed.Code
	clusterDenied = kerr.ClusterAuthorizationFailed.Code
	txnDenied     = kerr.TransactionalIDAuthorizationFailed.Code
)

// authRow is an API's row of TestAuthorization: the scene and setup its
// request needs, the request, and the actions it needs. The row runs
// once with an authorizer granting exactly its needs, when the answer
// must carry no authorization error (and pass allowed), and once without
// each need, when it must carry that need's code (or pass denied).
type authRow struct {
	key     kmsg.Key
	name    string // what the row is about, beyond the API
	version int16  // 0: the highest served
	scene   sceneOpts
	setup   step
	req     func(t *testing.T, s *scene) kmsg.Request
	needs   []need
	allowed func(t *testing.T, resp kmsg.Response)
	denied  func(t *testing.T, resp kmsg.Response)
}

// TestAuthorization checks every API of the registration table against
// Kafka's operation table: each needs what its row says, answers the
// right code without it, and nothing more.
func TestAuthorization(t *testing.T) {
	rows := authRows()
	covered := map[int16]bool{}
	for _, r := range rows {
		covered[r.key.Int16()] = true
	}
	for _, k := range Keys() {
		if !covered[k] {
			t.Errorf("%s is registered but has no row in TestAuthorization", kmsg.NameForKey(k))
		}
	}
	for _, r := range rows {
		name := r.key.Name()
		if r.name != "" {
			name += "/" + r.name
		}
		t.Run(name+"/allowed", func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { r.run(t, -1) })
		})
		for i, n := range r.needs {
			t.Run(fmt.Sprintf("%s/without %s", name, n.grant), func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(t *testing.T) { r.run(t, i) })
			})
		}
	}
}

// run sends the row's request with every need granted but needs[without]
// (-1: all of them) and checks the answer.
func (r authRow) run(t *testing.T, without int) {
	api, _ := Lookup(r.key.Int16())
	v := cmp.Or(r.version, api.Max)
	s := newScene(t, r.scene, v)
	if r.setup != nil {
		r.setup(t, s)
	}
	allow := allowSet{}
	for i, n := range r.needs {
		if i != without {
			allow[n.grant] = true
		}
	}
	s.env.Authorizer = allow
	s.conn = &Conn{Principal: testPrincipal, Host: netip.MustParseAddr("127.0.0.1")}
	req := r.req(t, s)
	if req.Key() != r.key.Int16() {
		t.Fatalf("row of %s sends %s", r.key.Name(), kmsg.NameForKey(req.Key()))
	}
	req.SetVersion(v)
	resp, err := s.try(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp == nil {
		t.Fatal("no answer")
	}
	codes := authCodes(resp)
	if without < 0 {
		if len(codes) > 0 {
			t.Fatalf("with every need granted the answer carries %v", codeNames(codes))
		}
		if r.allowed != nil {
			r.allowed(t, resp)
		}
		return
	}
	n := r.needs[without]
	if n.code == 0 {
		r.denied(t, resp)
		return
	}
	if !slices.Contains(codes, n.code) {
		t.Fatalf("without %s the answer carries %v, want %s (%+v)", n.grant, codeNames(codes), codeNames([]int16{n.code})[0], resp)
	}
	for _, c := range codes {
		if c != n.code {
			t.Errorf("without %s the answer also carries %s", n.grant, codeNames([]int16{c})[0])
		}
	}
}

// authCodes lists the authorization errors of an answer: the values of
// its int16 fields named *ErrorCode that are one of Kafka's four.
func authCodes(r kmsg.Response) []int16 {
	var out []int16
	for _, c := range codeFields(r, func(field string) bool { return strings.HasSuffix(field, "ErrorCode") }) {
		if c == topicDenied || c == groupDenied || c == clusterDenied || c == txnDenied {
			out = append(out, c)
		}
	}
	return out
}

// want checks an answer of type R.
func want[R kmsg.Response](f func(t *testing.T, r R)) func(*testing.T, kmsg.Response) {
	return func(t *testing.T, resp kmsg.Response) {
		t.Helper()
		f(t, resp.(R))
	}
}

// TestAuthorizationSASLPrincipal: the authorizer sees the SASL
// principal, also when the client authenticated with bare tokens (a v0
// SaslHandshake, as kafka-python does), which leaves Conn.Principal
// anonymous.
func TestAuthorizationSASLPrincipal(t *testing.T) {
	env := &Env{Authorizer: allowSet{{aclWrite, resTopic, "t"}: true}}
	conn := &Conn{Principal: "User:ANONYMOUS", SASL: &Auth{principal: testPrincipal}}
	if !env.allowedTopic(&Request{Conn: conn}, aclWrite, "t") {
		t.Error("the SASL principal was not asked about")
	}
	conn.SASL = &Auth{}
	if env.allowedTopic(&Request{Conn: conn}, aclWrite, "t") {
		t.Error("an unauthenticated SASL connection was allowed as the SASL principal")
	}
}
