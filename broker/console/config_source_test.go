package console_test

import (
	"net/url"
	"regexp"
	"testing"

	"github.com/strata-broker/strata/test/harness"
)

// configRowOf finds a config row's value and source on a topic page.
func configRowOf(t *testing.T, body, name string) (value, source string) {
	t.Helper()
	re := regexp.MustCompile(`<tr (?:class="set")?><td>` + regexp.QuoteMeta(name) + `</td><td class="v">([^<]*)</td><td>([^<]*)</td></tr>`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no config row %s in\n%s", name, body)
	}
	return m[1], m[2]
}

// TestTopicConfigSource: a topic page's config rows name where each
// value comes from: "broker" for a key the broker's configuration sets
// (log.retention.ms for retention.ms), "topic" once the config form sets
// it on the topic, "default" for one nobody set, and "broker" again
// after the form deletes the topic's own value.
func TestTopicConfigSource(t *testing.T) {
	s := startSite(t, map[string]string{"log.retention.ms": "7200000"})
	harness.CreateTopic(t, s.b.Admin(), "conf", 1, nil)
	check := func(body, name, value, source string) {
		t.Helper()
		if v, src := configRowOf(t, body, name); v != value || src != source {
			t.Fatalf("%s: %q from %q, want %q from %q", name, v, src, value, source)
		}
	}
	body := s.must("/topics/conf")
	check(body, "retention.ms", "7200000", "broker")
	check(body, "segment.ms", "604800000", "default")

	code, body := s.post("/topics/conf/config", url.Values{"name": {"retention.ms"}, "value": {"123456"}, "op": {"set"}})
	if code != 200 {
		t.Fatalf("set retention.ms: %d %s", code, body)
	}
	check(body, "retention.ms", "123456", "topic")
	code, body = s.post("/topics/conf/config", url.Values{"name": {"segment.ms"}, "value": {"3600000"}, "op": {"set"}})
	if code != 200 {
		t.Fatalf("set segment.ms: %d %s", code, body)
	}
	check(body, "segment.ms", "3600000", "topic")

	code, body = s.post("/topics/conf/config", url.Values{"name": {"retention.ms"}, "op": {"delete"}})
	if code != 200 {
		t.Fatalf("delete retention.ms: %d %s", code, body)
	}
	check(body, "retention.ms", "7200000", "broker")
	code, body = s.post("/topics/conf/config", url.Values{"name": {"segment.ms"}, "op": {"delete"}})
	if code != 200 {
		t.Fatalf("delete segment.ms: %d %s", code, body)
	}
	check(body, "segment.ms", "604800000", "default")
	// The page read afresh agrees.
	body = s.must("/topics/conf")
	check(body, "retention.ms", "7200000", "broker")
	check(body, "segment.ms", "604800000", "default")
}
