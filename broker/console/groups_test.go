package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// committed is group's committed offsets of topic, by partition, as the
// broker answers OffsetFetch.
func committed(t *testing.T, adm *kadm.Client, group, topic string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	var out []string
	for p := range int32(8) {
		if o, ok := offs.Lookup(topic, p); ok {
			out = append(out, fmt.Sprintf("%d:%d", p, o.At))
		}
	}
	return strings.Join(out, ",")
}

// previewRow is one partition of a reset's confirmation: committed, new.
var previewRow = regexp.MustCompile(`<tr><td>([^<]+)</td><td class="n">([-\d]+)</td><td class="n">(\d+)</td></tr>`)

// TestGroupResetTargets: an empty group's offsets reset to the latest
// offsets, to an offset (clamped to each partition's range) and to a
// timestamp (milliseconds or RFC 3339), each previewed before the
// confirmation commits it.
func TestGroupResetTargets(t *testing.T) {
	s := startSite(t, nil)
	adm := s.b.Admin()
	harness.CreateTopic(t, adm, "rs", 2, nil)
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	base := time.UnixMilli(1_700_000_000_000) // 2023-11-14T22:13:20Z
	for i := range 6 {
		produce(t, cl, &kgo.Record{Topic: "rs", Partition: 0, Value: []byte("p0"), Timestamp: base.Add(time.Duration(i) * time.Second)})
	}
	for i := range 4 {
		produce(t, cl, &kgo.Record{Topic: "rs", Partition: 1, Value: []byte("p1"), Timestamp: base.Add(time.Duration(i) * time.Second)})
	}
	commitOffsets(t, adm, "resetters", map[string]map[int32]int64{"rs": {0: 1, 1: 1}})
	s.must("/groups/resetters", `<dd id="total-lag">8</dd>`, `<dd id="state">Empty</dd>`)

	for _, tc := range []struct {
		name    string
		form    url.Values
		preview string // partition=committed>new, as the confirmation lists them
		offsets string // as committed
		lag     string
	}{
		{"latest", url.Values{"to": {"latest"}}, "rs-0=1>6,rs-1=1>4", "0:6,1:4", "0"},
		{"offset", url.Values{"to": {"offset"}, "offset": {"2"}}, "rs-0=6>2,rs-1=4>2", "0:2,1:2", "6"},
		{"offset past the end", url.Values{"to": {"offset"}, "offset": {"5"}}, "rs-0=2>5,rs-1=2>4", "0:5,1:4", "1"},
		{"timestamp ms", url.Values{"to": {"timestamp"}, "ts": {fmt.Sprint(base.Add(3 * time.Second).UnixMilli())}}, "rs-0=5>3,rs-1=4>3", "0:3,1:3", "4"},
		{"timestamp RFC 3339", url.Values{"to": {"timestamp"}, "ts": {"2023-11-14T22:13:24.500Z"}}, "rs-0=3>5,rs-1=3>4", "0:5,1:4", "1"},
		{"earliest, one topic", url.Values{"to": {"earliest"}, "topic": {"rs"}}, "rs-0=5>0,rs-1=4>0", "0:0,1:0", "10"},
	} {
		before := committed(t, adm, "resetters", "rs")
		code, body := s.post("/groups/resetters/reset", tc.form)
		if code != http.StatusOK || !strings.Contains(body, `id="confirm-reset"`) {
			t.Fatalf("%s: preview: %d %s", tc.name, code, body)
		}
		var rows []string
		for _, m := range previewRow.FindAllStringSubmatch(body, -1) {
			rows = append(rows, m[1]+"="+m[2]+">"+m[3])
		}
		if got := strings.Join(rows, ","); got != tc.preview {
			t.Fatalf("%s: preview %s, want %s", tc.name, got, tc.preview)
		}
		if got := committed(t, adm, "resetters", "rs"); got != before {
			t.Fatalf("%s: the preview committed %s (was %s)", tc.name, got, before)
		}
		// The confirmation form's hidden fields, sent back.
		confirm := url.Values{"confirm": {"yes"}}
		for k, v := range tc.form {
			confirm[k] = v
		}
		code, body = s.post("/groups/resetters/reset", confirm)
		if code != http.StatusOK || !strings.Contains(body, `<dd id="total-lag">`+tc.lag+`</dd>`) {
			t.Fatalf("%s: confirm: %d, want lag %s:\n%s", tc.name, code, tc.lag, body)
		}
		if got := committed(t, adm, "resetters", "rs"); got != tc.offsets {
			t.Fatalf("%s: committed %s, want %s", tc.name, got, tc.offsets)
		}
	}
	// Bad resets: 400 with the reason.
	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"to": {"yesterday"}}, "want earliest, latest, timestamp or offset"},
		{url.Values{"to": {"timestamp"}, "ts": {"soon"}}, `timestamp "soon"`},
		{url.Values{"to": {"offset"}, "offset": {"-3"}}, "negative"},
		{url.Values{"to": {"earliest"}, "topic": {"no-such"}}, `topic "no-such" does not exist`},
	} {
		if code, body := s.post("/groups/resetters/reset", tc.form); code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("reset %v: %d %q, want 400 naming %q", tc.form, code, body, tc.want)
		}
	}
	for _, p := range []string{"/groups/nobody", "/groups/nobody/reset"} {
		var code int
		var body string
		if strings.HasSuffix(p, "/reset") {
			code, body = s.post(p, url.Values{"to": {"earliest"}, "topic": {"rs"}})
		} else {
			code, body = s.get(p)
		}
		if code != http.StatusNotFound || !strings.Contains(body, `group "nobody" does not exist`) {
			t.Errorf("%s of a group that does not exist: %d %s", p, code, body)
		}
	}
}

// lagRowRe is a lag table row: partition and lag.
var lagRowRe = regexp.MustCompile(`<tr><td>([^<]+)</td><td class="n">[-\d]+</td><td class="n">[-\d]+</td><td class="n lag">(\d+)</td></tr>`)

// TestGroupLagSort: ?sort=lag lists the partitions by lag, largest first;
// the default is by partition.
func TestGroupLagSort(t *testing.T) {
	s := startSite(t, nil)
	harness.CreateTopic(t, s.b.Admin(), "ls", 3, nil)
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 12 {
		produce(t, cl, &kgo.Record{Topic: "ls", Partition: int32(i % 3), Value: []byte("v")})
	}
	commitOffsets(t, s.b.Admin(), "sorted", map[string]map[int32]int64{"ls": {0: 3, 1: 0, 2: 2}}) // lags 1, 4, 2
	rows := func(path string) string {
		var out []string
		for _, m := range lagRowRe.FindAllStringSubmatch(s.must(path), -1) {
			out = append(out, m[1]+"="+m[2])
		}
		return strings.Join(out, ",")
	}
	if got := rows("/groups/sorted?sort=lag"); got != "ls-1=4,ls-2=2,ls-0=1" {
		t.Fatalf("sort=lag: %s", got)
	}
	for _, p := range []string{"/groups/sorted", "/groups/sorted?sort=partition"} {
		if got := rows(p); got != "ls-0=1,ls-1=4,ls-2=2" {
			t.Fatalf("%s: %s", p, got)
		}
	}
	if code, _ := s.get("/groups/sorted?sort=bogus"); code != http.StatusBadRequest {
		t.Fatalf("sort=bogus: %d", code)
	}
}

// consumeAll polls cl until it has n records.
func consumeAll(t *testing.T, cl *kgo.Client, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for got := 0; got < n; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d: %v", got, n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		got += fs.NumRecords()
	}
}

// memberRowRe is a members table row: member id, client id, host,
// assignment.
var memberRowRe = regexp.MustCompile(`<tr><td>([^<]+)</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td></tr>`)

// TestGroupLiveMembers: a group with a live consumer lists it with its
// assignment, and its offsets reset is previewed but refused (409)
// until the consumer leaves.
func TestGroupLiveMembers(t *testing.T) {
	s := startSite(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	harness.CreateTopic(t, s.b.Admin(), "lv", 2, nil)
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 4 {
		produce(t, cl, &kgo.Record{Topic: "lv", Partition: int32(i % 2), Value: []byte("v")})
	}
	consumer := s.b.Client(kgo.ConsumerGroup("live"), kgo.ConsumeTopics("lv"), kgo.ClientID("console-member"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	consumeAll(t, consumer, 4)
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	body := s.waitFor("/groups/live", `<dd id="state">Stable</dd>`)
	m := memberRowRe.FindStringSubmatch(body[strings.Index(body, `id="members"`):])
	if m == nil || m[2] != "console-member" || strings.Fields(m[4])[0] != "lv-0" || len(strings.Fields(m[4])) != 2 || strings.Fields(m[4])[1] != "lv-1" {
		t.Fatalf("members: %q\n%s", m, body)
	}
	s.must("/groups", `<a href="/groups/live">live</a></td><td>Stable</td><td>classic</td>`)

	// The preview is shown; the confirmation is refused, naming why.
	if code, body := s.post("/groups/live/reset", url.Values{"to": {"earliest"}}); code != http.StatusOK || !strings.Contains(body, "Confirm reset") {
		t.Fatalf("preview with a live member: %d %s", code, body)
	}
	code, body := s.post("/groups/live/reset", url.Values{"to": {"earliest"}, "confirm": {"yes"}})
	if code != http.StatusConflict || !strings.Contains(body, "stop its consumers") || !strings.Contains(body, "1 members") {
		t.Fatalf("reset with a live member: %d %s", code, body)
	}
	if got := committed(t, s.b.Admin(), "live", "lv"); got != "0:2,1:2" {
		t.Fatalf("offsets after the refused reset: %s", got)
	}
	consumer.Close()
	s.waitFor("/groups/live", `<dd id="state">Empty</dd>`)
	if code, body := s.post("/groups/live/reset", url.Values{"to": {"earliest"}, "confirm": {"yes"}}); code != http.StatusOK || !strings.Contains(body, `<dd id="total-lag">4</dd>`) {
		t.Fatalf("reset once empty: %d %s", code, body)
	}
}

// TestGroupConsumerProtocol: a KIP-848 group (the consumer protocol,
// assignments made by the coordinator) shows protocol "consumer" in the
// list and on its page, with its member's assignment and its lag.
func TestGroupConsumerProtocol(t *testing.T) {
	s := startSite(t, map[string]string{"group.consumer.heartbeat.interval.ms": "200"})
	harness.CreateTopic(t, s.b.Admin(), "np", 2, nil)
	cl := s.b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 6 {
		produce(t, cl, &kgo.Record{Topic: "np", Partition: int32(i % 2), Value: []byte("v")})
	}
	consumer := s.b.Client(kgo.ConsumerGroup("new-proto"), kgo.ConsumeTopics("np"), kgo.ClientID("kip848-member"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	consumeAll(t, consumer, 6)
	// The member commits offset 1 of each partition: a lag of 2 each.
	ctx, cancel := context.WithTimeout(context.Background(), harness.OpTimeout)
	defer cancel()
	var commitErr error
	consumer.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"np": {0: {Epoch: -1, Offset: 1}, 1: {Epoch: -1, Offset: 1}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, res *kmsg.OffsetCommitResponse, err error) {
			commitErr = err
			if res != nil {
				for _, rt := range res.Topics {
					for _, p := range rt.Partitions {
						commitErr = errors.Join(commitErr, kerr.ErrorForCode(p.ErrorCode))
					}
				}
			}
		})
	if commitErr != nil {
		t.Fatalf("commit: %v", commitErr)
	}
	s.must("/groups", `<a href="/groups/new-proto">new-proto</a></td><td>Stable</td><td>consumer</td>`)
	body := s.waitFor("/groups/new-proto", `<dd id="total-lag">4</dd>`)
	if !strings.Contains(body, "<dt>Protocol</dt><dd>consumer</dd>") {
		t.Fatalf("group page protocol:\n%s", body)
	}
	m := memberRowRe.FindStringSubmatch(body[strings.Index(body, `id="members"`):])
	if m == nil || m[2] != "kip848-member" || !strings.Contains(m[4], "np-0") || !strings.Contains(m[4], "np-1") {
		t.Fatalf("members: %q\n%s", m, body)
	}
}
