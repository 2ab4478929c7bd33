package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// exprTopic makes topic "people" with 20 records over 2 partitions:
// key p<i>, value {"user":{"id":i}} (plain text for every fourth),
// header region=eu on every fifth, and no region on the odd ones.
func exprTopic(t *testing.T) (*site, *kgo.Client) {
	s := startSite(t, nil)
	harness.CreateTopic(t, s.b.Admin(), "people", 2, nil)
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 20 {
		r := &kgo.Record{Topic: "people", Partition: int32(i % 2), Key: fmt.Appendf(nil, "p%d", i), Value: fmt.Appendf(nil, `{"user":{"id":%d}}`, i)}
		if i%4 == 3 {
			r.Value = fmt.Appendf(nil, "plain %d", i)
		}
		switch {
		case i%5 == 0:
			r.Headers = []kgo.RecordHeader{{Key: "region", Value: []byte("eu")}}
		case i%2 == 0:
			r.Headers = []kgo.RecordHeader{{Key: "region", Value: []byte("us")}}
		}
		produce(t, cl, r)
	}
	return s, cl
}

// keys are the keys of the records a message page shows, in order.
func keys(body string) []string {
	var out []string
	for _, row := range strings.Split(body, `class="record"`)[1:] {
		k := row[strings.Index(row, "<pre>")+len("<pre>"):]
		out = append(out, k[:strings.Index(k, "</pre>")])
	}
	return out
}

func browse(s *site, expr string, extra ...string) []string {
	s.t.Helper()
	q := url.Values{"seek": {"start"}, "limit": {"100"}, "expr": {expr}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return keys(s.must("/topics/people/messages?" + q.Encode()))
}

// TestExprFilter: the browser's CEL filter finds records by a header and
// by a JSON field, skips the records it fails on, applies with the
// substring filters and to the export, and a bad expression is a 400
// with CEL's message.
func TestExprFilter(t *testing.T) {
	s, _ := exprTopic(t)
	s.must("/topics/people/messages", `id="expr"`, "<code>json</code>")
	for _, c := range []struct {
		expr  string
		extra []string
		want  string
	}{
		// Odd records have no region: "no such key", skipped.
		{expr: `headers["region"] == "eu"`, want: "p0 p5 p10 p15"},
		{expr: `headers.region == "eu" && partition == 1`, want: "p5 p15"},
		// Every fourth value is not JSON: json is null, skipped.
		{expr: `json.user.id == 7`, want: ""},
		{expr: `json.user.id == 6`, want: "p6"},
		{expr: `json.user.id >= 16 || value.startsWith("plain")`, want: "p3 p7 p11 p15 p16 p17 p18 p19"},
		{expr: `json == null`, want: "p3 p7 p11 p15 p19"},
		{expr: `offset == 2`, extra: []string{"partition", "0"}, want: "p4"},
		// ANDed with the substring filters.
		{expr: `json.user.id > 10`, extra: []string{"key", "p1"}, want: "p12 p13 p14 p16 p17 p18"},
		{expr: `json.user.id > 10`, extra: []string{"header", "region=eu"}, want: ""},
		{expr: `has(json.user)`, extra: []string{"header", "region=eu"}, want: "p0 p5 p10"},
		{expr: ``, extra: []string{"key", "re:^p1[89]$"}, want: "p18 p19"},
	} {
		got := browse(s, c.expr, c.extra...)
		want := strings.Fields(c.want)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("expr %q %v: %v, want %v", c.expr, c.extra, got, want)
		}
	}

	// The export applies it too.
	_, exp := s.get("/topics/people/export?" + url.Values{"as": {"json"}, "seek": {"start"}, "limit": {"100"}, "expr": {`json.user.id < 3`}}.Encode())
	var recs []struct{ Key string }
	if err := json.Unmarshal([]byte(exp), &recs); err != nil || len(recs) != 3 {
		t.Fatalf("export: %d records, %v\n%s", len(recs), err, exp)
	}
	_, csv := s.get("/topics/people/export?" + url.Values{"as": {"csv"}, "seek": {"start"}, "expr": {`key == "p9"`}}.Encode())
	if lines := strings.Split(strings.TrimSpace(csv), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "1,4,") {
		t.Fatalf("CSV export: %q", csv)
	}

	// Bad expressions: 400 with the reason; the broker still serves.
	for expr, want := range map[string]string{
		`json.user.id ==`:             "Syntax error",
		`nope`:                        "undeclared reference to 'nope'",
		`key + "!"`:                   "has type string, want bool",
		strings.Repeat("true||", 400): "at most 2048",
	} {
		for _, page := range []string{"messages", "export?as=json&", "tail"} {
			path := "/topics/people/" + page
			if !strings.Contains(page, "?") {
				path += "?"
			}
			code, body := s.get(path + url.Values{"expr": {expr}}.Encode())
			if code != http.StatusBadRequest || !strings.Contains(body, want) {
				t.Errorf("%s with %.30q: %d %s", page, expr, code, body)
			}
		}
	}
	// An expression too costly for one record matches nothing, quickly.
	big := "[" + strings.Repeat("0,", 99) + "0]"
	if got := browse(s, big+`.all(a, `+big+`.all(b, `+big+`.all(c, true)))`); len(got) != 0 {
		t.Errorf("a costly expression matched %v", got)
	}
	s.must("/topics/people/messages?seek=start&key=p19", "p19")
}

// TestExprTail: the live tail sends only the new records the expression
// matches.
func TestExprTail(t *testing.T) {
	s, cl := exprTopic(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rq, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/topics/people/tail?"+url.Values{"expr": {`json.user.id == 99`}}.Encode(), nil)
	res, err := s.hc.Do(rq)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("tail: %d", res.StatusCode)
	}
	rd := bufio.NewReader(res.Body)
	if line, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(line, ": tailing") {
		t.Fatalf("tail: %q %v", line, err)
	}
	produce(t, cl, &kgo.Record{Topic: "people", Partition: 0, Key: []byte("skip"), Value: []byte(`{"user":{"id":98}}`)},
		&kgo.Record{Topic: "people", Partition: 1, Key: []byte("skip-too"), Value: []byte("not json")},
		&kgo.Record{Topic: "people", Partition: 0, Key: []byte("wanted"), Value: []byte(`{"user":{"id":99}}`)})
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("tail ended before the record: %v", err)
		}
		if strings.Contains(line, "skip") {
			t.Fatalf("tail sent a record the expression fails: %s", line)
		}
		if strings.Contains(line, "wanted") {
			return
		}
	}
}
