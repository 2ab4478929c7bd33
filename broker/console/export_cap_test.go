package console_test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-broker/strata/test/harness"
)

// exportCap is the console's export cap: the broker sets none, so the
// default of 10 MiB holds.
const exportCap = 10 << 20

// exportOf fetches an export and returns its body and X-Strata-Truncated.
func exportOf(t *testing.T, s *site, topic, query string) (string, string) {
	t.Helper()
	res, err := s.hc.Get(s.base + "/topics/" + topic + "/export?" + query)
	if err != nil {
		t.Fatalf("export %s: %v", query, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("export %s: %d %v %.300s", query, res.StatusCode, err, body)
	}
	return string(body), res.Header.Get("X-Strata-Truncated")
}

// exportedOffsets parses a JSON export and returns its offsets.
func exportedOffsets(t *testing.T, body string) []int64 {
	t.Helper()
	var recs []struct {
		Offset int64   `json:"offset"`
		Value  *string `json:"value"`
	}
	if err := json.Unmarshal([]byte(body), &recs); err != nil {
		t.Fatalf("export: not JSON: %v (%d bytes)", err, len(body))
	}
	var offs []int64
	for _, r := range recs {
		offs = append(offs, r.Offset)
	}
	return offs
}

// fillExport produces ten records of 990,000 bytes to a new topic, so
// that an eleventh as big would pass the cap, checks that the export of
// these ten is whole, and returns its size.
func fillExport(t *testing.T, s *site, cl *kgo.Client, topic string, ts time.Time) int {
	t.Helper()
	harness.CreateTopic(t, s.b.Admin(), topic, 1, nil)
	for i := range 10 {
		produce(t, cl, &kgo.Record{Topic: topic, Value: xs(990_000), Timestamp: ts.Add(time.Duration(i) * time.Millisecond)})
	}
	body, truncated := exportOf(t, s, topic, "as=json&seek=start&limit=100")
	if offs := exportedOffsets(t, body); truncated != "false" || len(offs) != 10 {
		t.Fatalf("%s: export under the cap: truncated %q, offsets %v", topic, truncated, offs)
	}
	return len(body)
}

// xs is n bytes of x.
func xs(n int) []byte { return []byte(strings.Repeat("x", n)) }

// checkCapped checks a JSON export of topic past the cap: truncated,
// within the cap, its records the first 10 to 11.
func checkCapped(t *testing.T, s *site, topic string) {
	t.Helper()
	body, truncated := exportOf(t, s, topic, "as=json&seek=start&limit=100")
	offs := exportedOffsets(t, body)
	if truncated != "true" || len(body) > exportCap || len(offs) < 10 || len(offs) > 11 {
		t.Fatalf("%s: JSON export over the cap: truncated %q, %d bytes (cap %d), offsets %v", topic, truncated, len(body), exportCap, offs)
	}
	for i, o := range offs {
		if o != int64(i) {
			t.Fatalf("%s: JSON export over the cap: offsets %v, want from 0 on", topic, offs)
		}
	}
}

// TestExportCap: an export that would pass the cap stops before it,
// whole records only, says so in X-Strata-Truncated and stays within the
// cap, as JSON and as CSV; one under the cap is whole and says it is.
func TestExportCap(t *testing.T) {
	s := startSite(t, nil)
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ts := time.UnixMilli(1_700_000_000_000)
	fillExport(t, s, cl, "big", ts)
	produce(t, cl, &kgo.Record{Topic: "big", Value: xs(990_000), Timestamp: ts.Add(10 * time.Millisecond)})
	checkCapped(t, s, "big")
	body, truncated := exportOf(t, s, "big", "as=csv&seek=start&limit=100")
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || truncated != "true" || len(body) > exportCap || len(rows) != 11 {
		t.Fatalf("CSV export over the cap: truncated %q, %d bytes (cap %d), %d rows (header and 10 wanted), %v", truncated, len(body), exportCap, len(rows), err)
	}

	// A record whose JSON line brings the export to the cap exactly,
	// before its separator and the closing bracket, must be left out.
	t.Run("exact", func(t *testing.T) {
		size := fillExport(t, s, cl, "edge", ts)
		ts10 := ts.Add(10 * time.Millisecond)
		prefix := fmt.Sprintf(`{"partition":0,"offset":10,"timestamp":%d,"key":null,"value":"`, ts10.UnixMilli())
		line := exportCap - size
		produce(t, cl, &kgo.Record{Topic: "edge", Value: xs(line - len(prefix) - len(`"}`)), Timestamp: ts10},
			&kgo.Record{Topic: "edge", Value: xs(1000), Timestamp: ts10.Add(time.Millisecond)})
		checkCapped(t, s, "edge")
	})
}
