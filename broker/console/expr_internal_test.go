package console

import (
	"context"
	"strings"
	"testing"

	"github.com/strata-broker/strata/tier/record"
)

// TestExprMatch evaluates expression filters on records without a
// broker: the variables, a runtime error as no match, the cost limit and
// a cancelled context.
func TestExprMatch(t *testing.T) {
	m := &message{Partition: 2, Offset: 41, Timestamp: 1_700_000_000_000, Key: []byte("k\xff1"),
		Value:   []byte(`{"user":{"id":42,"name":"ann"},"tags":["a","b"],"ok":true}`),
		Headers: []record.Header{{Key: "region", Value: []byte("eu")}, {Key: "region", Value: []byte("us")}, {Key: "nil"}}}
	plain := &message{Key: nil, NullKey: true, Value: []byte("not json")}
	huge := "[" + strings.Repeat("0,", 99) + "0]"
	for _, c := range []struct {
		expr       string
		m, nonJSON bool
	}{
		{`json.user.id == 42`, true, false},
		{`json.user.id == 42.0 && json.user.name == "ann"`, true, false},
		{`"b" in json.tags && json.ok`, true, false},
		{`json.ok`, true, false},
		{`json == null`, false, true},
		{`headers["region"] == "us" && headers["nil"] == ""`, true, false},
		{`headers.region == "eu"`, false, false},    // the last of a repeated header wins
		{`headers["missing"] == "x"`, false, false}, // no such key: no match
		{`!("missing" in headers)`, true, true},
		{`key == "k\uFFFD1"`, true, false}, // invalid UTF-8 replaced
		{`key == ""`, false, true},
		{`value.startsWith("{") && size(value) > 10`, true, false},
		{`value.contains("not")`, false, true},
		{`partition == 2 && offset == 41 && timestamp > 1600000000000`, true, false},
		{`json.user.id > 1`, true, false},           // on a non-JSON value: json is null, an error
		{`int(json.user.id) % 2 == 0`, true, false}, // doubles convert
		{`json.user.id == 42 || value == "not json"`, true, true},
		// 100^4 iterations: stopped by the cost limit, no match.
		{huge + `.all(a, ` + huge + `.all(b, ` + huge + `.all(c, ` + huge + `.all(d, true))))`, false, false},
	} {
		f, err := compileExpr(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		if got := f.match(context.Background(), m); got != c.m {
			t.Errorf("%s on the JSON record: %v, want %v", c.expr, got, c.m)
		}
		if got := f.match(context.Background(), plain); got != c.nonJSON {
			t.Errorf("%s on the text record: %v, want %v", c.expr, got, c.nonJSON)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f, _ := compileExpr(`true`)
	if f.match(ctx, m) {
		t.Error("a cancelled request still matches")
	}
}

// TestExprCompile: what does not compile, is not a bool or is too long
// is the user's error, with CEL's message.
func TestExprCompile(t *testing.T) {
	for expr, want := range map[string]string{
		`key ==`:                        "does not compile",
		`nope == 1`:                     "undeclared reference to 'nope'",
		`key + "x"`:                     "has type string, want bool",
		`offset + 1`:                    "has type int, want bool",
		`key == 1`:                      "no matching overload",
		strings.Repeat("true && ", 300): "at most 2048",
		strings.Repeat("(", 40) + "true" + strings.Repeat(")", 40): "does not compile",
	} {
		_, err := compileExpr(expr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40s: %v, want %q", expr, err, want)
		}
	}
	if _, err := parseFilters("", "", "", "  "); err != nil {
		t.Errorf("a blank expression: %v", err)
	}
}

// TestExprSpentCost: every evaluation adds its cost, one cut short at the
// limit at least the limit, so a live tail's budget counts them.
func TestExprSpentCost(t *testing.T) {
	m := &message{Value: []byte(`{"id":1}`)}
	cheap, err := compileExpr(`json.id == 1`)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		cheap.match(context.Background(), m)
	}
	if c := cheap.spentCost(); c == 0 || c > 1000 {
		t.Fatalf("10 cheap evaluations cost %d", c)
	}
	big := "[" + strings.Repeat("0,", 99) + "0]"
	costly, err := compileExpr(big + `.all(a, ` + big + `.all(b, ` + big + `.all(c, true)))`)
	if err != nil {
		t.Fatal(err)
	}
	costly.match(context.Background(), m)
	if c := costly.spentCost(); c < exprCostLimit {
		t.Fatalf("an evaluation cut short at the limit cost %d, want at least %d", c, exprCostLimit)
	}
	if (*exprFilter)(nil).spentCost() != 0 {
		t.Fatal("no filter spent something")
	}
}
