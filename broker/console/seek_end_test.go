package console_test

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

var recordOffset = regexp.MustCompile(`<tr class="record" data-offset="(\d+)"`)

// TestSeekEndWithFilter: from the end, a filter shows the newest
// matches, not the oldest of the window it reads.
func TestSeekEndWithFilter(t *testing.T) {
	s := startSite(t, nil)
	harness.CreateTopic(t, s.b.Admin(), "log", 1, nil)
	cl := s.b.Client(kgo.DefaultProduceTopic("log"))
	var recs []*kgo.Record
	for i := range 120 {
		r := &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}
		if i%2 == 0 {
			r.Headers = []kgo.RecordHeader{{Key: "even", Value: []byte("yes")}}
		}
		recs = append(recs, r)
	}
	produce(t, cl, recs...)
	for _, q := range []string{"header=even", "expr=" + "has(headers.even)"} {
		body := s.must("/topics/log/messages?seek=end&limit=10&" + q)
		var got []int
		for _, m := range recordOffset.FindAllStringSubmatch(body, -1) {
			o, _ := strconv.Atoi(m[1])
			got = append(got, o)
		}
		slices.Sort(got)
		want := []int{100, 102, 104, 106, 108, 110, 112, 114, 116, 118}
		if !slices.Equal(got, want) {
			t.Fatalf("%s from the end: offsets %v, want %v", q, got, want)
		}
	}
}
