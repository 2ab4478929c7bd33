package handler

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quotaOp is one AlterClientQuotas entry in short: entity components as
// type=name pairs ("" name: the default), key, value (0: remove).
type quotaOp struct {
	entity []string // type, name, type, name...
	key    string
	value  float64
}

func alterQuotas(t *testing.T, b *testBroker, validateOnly bool, ops ...quotaOp) []int16 {
	t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.ValidateOnly = validateOnly
	for _, op := range ops {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		for i := 0; i < len(op.entity); i += 2 {
			c := kmsg.NewAlterClientQuotasRequestEntryEntity()
			c.Type = op.entity[i]
			if op.entity[i+1] != "" {
				c.Name = kmsg.StringPtr(op.entity[i+1])
			}
			e.Entity = append(e.Entity, c)
		}
		o := kmsg.NewAlterClientQuotasRequestEntryOp()
		o.Key, o.Value, o.Remove = op.key, op.value, op.value == 0
		e.Ops = append(e.Ops, o)
		req.Entries = append(req.Entries, e)
	}
	resp := b.do(t, req).(*kmsg.AlterClientQuotasResponse)
	var codes []int16
	for _, e := range resp.Entries {
		codes = append(codes, e.ErrorCode)
	}
	return codes
}

// describeQuotas returns the matching entities as "type=name,..." (name
// <default> for a default) → "key=value,..." strings.
func describeQuotas(t *testing.T, b *testBroker, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) (int16, map[string]string) {
	t.Helper()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Strict, req.Components = strict, comps
	resp := b.do(t, req).(*kmsg.DescribeClientQuotasResponse)
	out := map[string]string{}
	for _, e := range resp.Entries {
		var ent, vals string
		for _, c := range e.Entity {
			name := "<default>"
			if c.Name != nil {
				name = *c.Name
			}
			ent += fmt.Sprintf("%s=%s,", c.Type, name)
		}
		for _, v := range e.Values {
			vals += fmt.Sprintf("%s=%v,", v.Key, v.Value)
		}
		out[ent] = vals
	}
	return resp.ErrorCode, out
}

func comp(typ string, match kmsg.QuotasMatchType, name string) kmsg.DescribeClientQuotasRequestComponent {
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType = typ, match
	if name != "" {
		c.Match = kmsg.StringPtr(name)
	}
	return c
}

// TestClientQuotasAlterDescribe: AlterClientQuotas sets and removes values
// per entity, refuses invalid entries one by one, validate_only stores
// nothing; DescribeClientQuotas filters as Kafka's EXACT, DEFAULT and ANY
// matches, strict and not.
func TestClientQuotasAlterDescribe(t *testing.T) {
	b := newTestBroker(t, brokerOpts{})
	bad := int16(kerr.InvalidRequest.Code)
	codes := alterQuotas(t, b, false,
		quotaOp{[]string{"user", "alice"}, "producer_byte_rate", 1024},
		quotaOp{[]string{"user", "alice", "client-id", "app"}, "consumer_byte_rate", 2048},
		quotaOp{[]string{"user", ""}, "request_percentage", 50.5},
		quotaOp{[]string{"client-id", ""}, "producer_byte_rate", 100},
		quotaOp{[]string{"ip", "127.0.0.1"}, "connection_creation_rate", 10},
		quotaOp{[]string{"ip", ""}, "connection_creation_rate", 20},
		// Invalid ones.
		quotaOp{[]string{"user", "bob"}, "connection_creation_rate", 10},
		quotaOp{[]string{"ip", "127.0.0.1"}, "producer_byte_rate", 10},
		quotaOp{[]string{"ip", "not-an-ip"}, "connection_creation_rate", 10},
		quotaOp{[]string{"ip", "1.2.3.4", "user", "x"}, "connection_creation_rate", 10},
		quotaOp{[]string{"user", "a", "user", "b"}, "producer_byte_rate", 10},
		quotaOp{[]string{"group", "g"}, "producer_byte_rate", 10},
		quotaOp{[]string{"user", "bob"}, "producer_byte_rate", 10.5},
		quotaOp{[]string{"user", "bob"}, "producer_byte_rate", -1},
		quotaOp{[]string{"user", "bob"}, "no_such_key", 1},
	)
	want := []int16{0, 0, 0, 0, 0, 0, bad, bad, bad, bad, bad, bad, bad, bad, bad}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	if codes := alterQuotas(t, b, true, quotaOp{[]string{"user", "carol"}, "producer_byte_rate", 1}); codes[0] != 0 {
		t.Fatalf("validate_only: %v", codes)
	}
	exact, def, anyOf := kmsg.QuotasMatchTypeExact, kmsg.QuotasMatchTypeDefault, kmsg.QuotasMatchTypeAny
	for _, tc := range []struct {
		strict bool
		comps  []kmsg.DescribeClientQuotasRequestComponent
		want   string
	}{
		{false, nil, "map[client-id=<default>,:producer_byte_rate=100, ip=127.0.0.1,:connection_creation_rate=10, ip=<default>,:connection_creation_rate=20, user=<default>,:request_percentage=50.5, user=alice,:producer_byte_rate=1024, user=alice,client-id=app,:consumer_byte_rate=2048,]"},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", exact, "alice")}, "map[user=alice,:producer_byte_rate=1024, user=alice,client-id=app,:consumer_byte_rate=2048,]"},
		{true, []kmsg.DescribeClientQuotasRequestComponent{comp("user", exact, "alice")}, "map[user=alice,:producer_byte_rate=1024,]"},
		{true, []kmsg.DescribeClientQuotasRequestComponent{comp("user", def, "")}, "map[user=<default>,:request_percentage=50.5,]"},
		{true, []kmsg.DescribeClientQuotasRequestComponent{comp("user", anyOf, "")}, "map[user=<default>,:request_percentage=50.5, user=alice,:producer_byte_rate=1024,]"},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", anyOf, "")}, "map[client-id=<default>,:producer_byte_rate=100, user=alice,client-id=app,:consumer_byte_rate=2048,]"},
		{true, []kmsg.DescribeClientQuotasRequestComponent{comp("user", exact, "alice"), comp("client-id", exact, "app")}, "map[user=alice,client-id=app,:consumer_byte_rate=2048,]"},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("ip", exact, "127.0.0.1")}, "map[ip=127.0.0.1,:connection_creation_rate=10,]"},
		{false, []kmsg.DescribeClientQuotasRequestComponent{comp("user", exact, "carol")}, "map[]"},
	} {
		code, got := describeQuotas(t, b, tc.strict, tc.comps...)
		if code != 0 || fmt.Sprint(got) != tc.want {
			t.Errorf("describe %v strict %v: code %d, got\n%v\nwant\n%v", tc.comps, tc.strict, code, got, tc.want)
		}
	}
	for _, comps := range [][]kmsg.DescribeClientQuotasRequestComponent{
		{comp("group", anyOf, "")},
		{comp("user", exact, "")},
		{comp("user", anyOf, ""), comp("user", anyOf, "")},
		{comp("ip", anyOf, ""), comp("user", anyOf, "")},
	} {
		if code, _ := describeQuotas(t, b, false, comps...); code != bad {
			t.Errorf("describe %v: code %d, want INVALID_REQUEST", comps, code)
		}
	}
	// Removing values; an entity left with none is gone.
	if codes := alterQuotas(t, b, false, quotaOp{[]string{"user", "alice"}, "producer_byte_rate", 0}, quotaOp{[]string{"user", "zed"}, "producer_byte_rate", 0}); fmt.Sprint(codes) != "[0 0]" {
		t.Fatalf("remove: %v", codes)
	}
	if _, got := describeQuotas(t, b, true, comp("user", anyOf, "")); fmt.Sprint(got) != "map[user=<default>,:request_percentage=50.5,]" {
		t.Fatalf("after removing: %v", got)
	}
}

// denyAll is an authorizer that refuses everything.
type denyAll struct{}

func (denyAll) Authorize(Action) bool { return false }

// TestClientQuotasAuthorization: without DESCRIBE_CONFIGS and
// ALTER_CONFIGS on the cluster both APIs answer CLUSTER_AUTHORIZATION_FAILED.
func TestClientQuotasAuthorization(t *testing.T) {
	b := newTestBroker(t, brokerOpts{})
	b.env.Authorizer = denyAll{}
	b.conn = &Conn{Principal: "User:alice"} // a client's: the broker's own requests (no connection) are allowed
	if codes := alterQuotas(t, b, false, quotaOp{[]string{"user", "alice"}, "producer_byte_rate", 1}); codes[0] != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alter: %v", codes)
	}
	if code, _ := describeQuotas(t, b, false); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("describe: %d", code)
	}
	if len(b.env.Cache.ClientQuotas()) != 0 {
		t.Fatal("an unauthorized alter was stored")
	}
}
