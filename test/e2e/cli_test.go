package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-broker/strata/test/harness"
)

// strataCLI runs the strata binary with an empty standard input and
// returns its stdout, stderr and exit code.
func strataCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return strataCLIIn(t, "", args...)
}

// strataCLIIn runs the strata binary with stdin as its standard input.
func strataCLIIn(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(testCtx(t), harness.Binary(t), args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run strata %v: %v", args, err)
	}
	return out.String(), errOut.String(), 0
}

// cliJSON runs a strata command that must succeed with --format json and
// decodes its output into v.
func cliJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out, errOut, code := strataCLI(t, append(args, "--format", "json")...)
	if code != 0 {
		t.Fatalf("strata %v: exit %d, stderr %q", args, code, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("strata %v: %v in %q", args, err, out)
	}
}

// cliOK runs a strata command that must succeed and returns its output.
func cliOK(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := strataCLI(t, args...)
	if code != 0 {
		t.Fatalf("strata %v: exit %d, stderr %q", args, code, errOut)
	}
	return out
}

// TestCLITopic runs every `strata topic` command against a broker:
// create with a config, list, describe (configs with their source,
// partitions with offsets), alter-config, produce from standard input
// with keys and headers, consume with rpk-style layouts, as JSON, from an
// offset and a time, as a group member, and delete; bad input exits 1.
func TestCLITopic(t *testing.T) {
	b := harness.Start(t, nil)
	br := "--brokers=" + b.Addr()

	var created []struct{ Topic, ID, Error string }
	cliJSON(t, &created, "topic", "create", "cli-t", "-p", "2", "-r", "1", "-c", "retention.ms=3600000", br)
	if len(created) != 1 || created[0].Topic != "cli-t" || created[0].ID == "" || created[0].Error != "" {
		t.Fatalf("create: %+v", created)
	}
	if _, errOut, code := strataCLI(t, "topic", "create", "cli-t", br); code != 1 || !strings.Contains(errOut, "create failed for 1 of 1 topics") {
		t.Fatalf("create of an existing topic: exit %d, stderr %q", code, errOut)
	}
	var listed []struct {
		Name              string
		Partitions        int
		ReplicationFactor int `json:"replication_factor"`
	}
	cliJSON(t, &listed, "topic", "list", br)
	if len(listed) != 1 || listed[0].Name != "cli-t" || listed[0].Partitions != 2 || listed[0].ReplicationFactor != 1 {
		t.Fatalf("list: %+v", listed)
	}
	if out := cliOK(t, "topic", "list", br); !strings.Contains(out, "NAME") || !strings.Contains(out, "cli-t") {
		t.Fatalf("list table: %q", out)
	}

	cliOK(t, "topic", "alter-config", "cli-t", "--set", "cleanup.policy=compact", "--set", "max.message.bytes=100000", br)
	cliOK(t, "topic", "alter-config", "cli-t", "--delete", "max.message.bytes", br)
	type described struct {
		Name    string
		Configs []struct{ Name, Value, Source string }
		Parts   []struct {
			Partition      int32
			Leader         int32
			LogStartOffset int64 `json:"log_start_offset"`
			HighWatermark  int64 `json:"high_watermark"`
		} `json:"partition_states"`
	}
	describe := func() described {
		var ds []described
		cliJSON(t, &ds, "topic", "describe", "cli-t", br)
		if len(ds) != 1 || ds[0].Name != "cli-t" || len(ds[0].Parts) != 2 {
			t.Fatalf("describe: %+v", ds)
		}
		return ds[0]
	}
	d := describe()
	configs := map[string]string{}
	for _, c := range d.Configs {
		configs[c.Name] = c.Value + "/" + c.Source
	}
	if configs["retention.ms"] != "3600000/topic" || configs["cleanup.policy"] != "compact/topic" || configs["max.message.bytes"] != "" {
		t.Fatalf("describe configs: %v", configs)
	}
	cliOK(t, "topic", "alter-config", "cli-t", "--set", "cleanup.policy=delete", br)

	// Produce: key:value lines to partition 0, with a header.
	in := "k0:v0\nk1:v1\nk2:v2\n"
	out, errOut, code := strataCLIIn(t, in, "topic", "produce", "cli-t", "--key-delimiter", ":", "-H", "src=cli", "-p", "0", br)
	if code != 0 || strings.Count(out, "Produced to partition 0") != 3 {
		t.Fatalf("produce: exit %d, %q, stderr %q", code, out, errOut)
	}
	before := time.Now()
	if out, errOut, code = strataCLIIn(t, "late\n", "topic", "produce", "cli-t", "-p", "1", "--format", "json", br); code != 0 || !strings.Contains(out, `"partition":1`) {
		t.Fatalf("produce json: exit %d, %q, stderr %q", code, out, errOut)
	}
	d = describe()
	if d.Parts[0].HighWatermark != 3 || d.Parts[1].HighWatermark != 1 || d.Parts[0].LogStartOffset != 0 {
		t.Fatalf("describe offsets: %+v", d.Parts)
	}

	// Consume with a layout, to the end.
	out = cliOK(t, "topic", "consume", "cli-t", "-p", "0", "-e", "-f", `%p@%o %k=%v %h{%k=%v;}%H\n`, br)
	if want := "0@0 k0=v0 src=cli;1\n0@1 k1=v1 src=cli;1\n0@2 k2=v2 src=cli;1\n"; out != want {
		t.Fatalf("consume layout: %q, want %q", out, want)
	}
	// As JSON: from offset 2, the last record of partition 0 (partition
	// 1 has only offset 0); then partition 1's record, without a key.
	type cliRecord struct {
		Partition int32
		Offset    int64
		Timestamp int64
		Key       *string
		Value     string
		Headers   []struct{ Key, Value string }
	}
	consumeJSON := func(args ...string) []cliRecord {
		t.Helper()
		out := cliOK(t, append([]string{"topic", "consume", "cli-t", "-e", "--format", "json", br}, args...)...)
		var recs []cliRecord
		for line := range strings.Lines(out) {
			var r cliRecord
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("consume json line %q: %v", line, err)
			}
			recs = append(recs, r)
		}
		return recs
	}
	if recs := consumeJSON("-o", "2"); len(recs) != 1 || recs[0].Partition != 0 || recs[0].Offset != 2 || *recs[0].Key != "k2" || recs[0].Value != "v2" ||
		len(recs[0].Headers) != 1 || recs[0].Headers[0].Key != "src" || recs[0].Headers[0].Value != "cli" {
		t.Fatalf("consume -o 2 json: %+v", recs)
	}
	if recs := consumeJSON("-p", "1"); len(recs) != 1 || recs[0].Key != nil || recs[0].Value != "late" || recs[0].Timestamp < before.UnixMilli() {
		t.Fatalf("consume -p 1 json: %+v", recs)
	}
	// The topic and timestamp directives.
	out = cliOK(t, "topic", "consume", "cli-t", "-p", "1", "-e", "-f", `%t %d\n`, br)
	if topic, ts, ok := strings.Cut(strings.TrimSpace(out), " "); !ok || topic != "cli-t" {
		t.Fatalf("consume layout %%t %%d: %q", out)
	} else if ms, err := strconv.ParseInt(ts, 10, 64); err != nil || ms < before.UnixMilli() {
		t.Fatalf("consume layout %%d: %q, want a timestamp from %d on", ts, before.UnixMilli())
	}
	// From a time: only the record produced after it.
	out = cliOK(t, "topic", "consume", "cli-t", "-o", "@"+strconv.FormatInt(before.UnixMilli(), 10), "-e", br)
	if out != "late\n" {
		t.Fatalf("consume from @%d: %q", before.UnixMilli(), out)
	}
	// -n stops early.
	if out = cliOK(t, "topic", "consume", "cli-t", "-p", "0", "-n", "2", br); out != "v0\nv1\n" {
		t.Fatalf("consume -n 2: %q", out)
	}
	// As a group: reads everything and commits, so the second run reads nothing.
	if out = cliOK(t, "topic", "consume", "cli-t", "-g", "cli-g", "-e", br); strings.Count(out, "\n") != 4 {
		t.Fatalf("consume -g: %q", out)
	}
	if out = cliOK(t, "topic", "consume", "cli-t", "-g", "cli-g", "-e", br); out != "" {
		t.Fatalf("consume -g again: %q", out)
	}

	for _, bad := range [][]string{
		{"topic", "describe", "nope", br},
		{"topic", "consume", "nope", "-e", br},
		{"topic", "consume", "cli-t", "-o", "yesterday", br},
		{"topic", "alter-config", "cli-t", br},
		{"topic", "list", "--format", "yaml", br},
	} {
		if _, errOut, code := strataCLI(t, bad...); code != 1 || errOut == "" {
			t.Errorf("strata %v: exit %d, stderr %q; want 1 and a message", bad, code, errOut)
		}
	}

	var deleted []struct{ Topic, Error string }
	cliJSON(t, &deleted, "topic", "delete", "cli-t", br)
	if len(deleted) != 1 || deleted[0].Error != "" {
		t.Fatalf("delete: %+v", deleted)
	}
	waitFor(t, "topic gone from the list", func() bool { return !strings.Contains(cliOK(t, "topic", "list", br), "cli-t") })
}

// TestCLIGroup: `strata group seek --topics` gives a new group offsets,
// `list` and `describe` show it with its lag per partition and in total,
// and `seek` moves it to the start (--dry-run: nothing committed), the
// end, a time and the offsets of a file; seeking a group that has a
// member fails. The broker's consumer group metrics agree with describe.
func TestCLIGroup(t *testing.T) {
	b, metrics := startMetered(t)
	br := "--brokers=" + b.Addr()
	harness.CreateTopic(t, b.Admin(), "cli-g", 2, nil)
	pr := b.Client(kgo.DefaultProduceTopic("cli-g"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// 7 records in each partition, the last 2 of each stamped after mid.
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	mid := base.Add(5 * time.Second)
	for i := range 14 {
		ts := base
		if i >= 10 {
			ts = base.Add(10 * time.Second)
		}
		produceSync(t, pr, &kgo.Record{Partition: int32(i % 2), Value: []byte(strconv.Itoa(i)), Timestamp: ts})
	}

	type seekRow struct {
		Topic            string
		Partition        int32
		Previous, Offset int64
	}
	seek := func(args ...string) []seekRow {
		t.Helper()
		var res []seekRow
		cliJSON(t, &res, append([]string{"group", "seek", "readers"}, append(args, br)...)...)
		if len(res) != 2 {
			t.Fatalf("seek %v: %+v", args, res)
		}
		return res
	}
	type groupDesc struct {
		Group, Type, State string
		Partitions         []struct {
			Partition int32
			Committed int64
			LogEnd    int64 `json:"log_end"`
			Lag       int64
		}
		TotalLag int64 `json:"total_lag"`
	}
	committed := func() (offsets []int64, total int64) {
		t.Helper()
		var ds []groupDesc
		cliJSON(t, &ds, "group", "describe", "readers", br)
		if len(ds) != 1 || len(ds[0].Partitions) != 2 || ds[0].State != "Empty" || ds[0].Type != "classic" {
			t.Fatalf("describe: %+v", ds)
		}
		for _, p := range ds[0].Partitions {
			if p.LogEnd != 7 || p.Lag != 7-p.Committed {
				t.Fatalf("describe: partition %+v, want log end 7 and lag 7-committed", p)
			}
			offsets = append(offsets, p.Committed)
		}
		return offsets, ds[0].TotalLag
	}

	if r := seek("--topics", "cli-g", "--to", "3"); r[0].Previous != -1 || r[0].Offset != 3 || r[1].Offset != 3 {
		t.Fatalf("seek a new group to 3: %+v", r)
	}
	if offs, total := committed(); !slices.Equal(offs, []int64{3, 3}) || total != 8 {
		t.Fatalf("after seek to 3: committed %v, total lag %d", offs, total)
	}
	var groups []struct{ Group, State string }
	cliJSON(t, &groups, "group", "list", br)
	if len(groups) != 1 || groups[0].Group != "readers" || groups[0].State != "Empty" {
		t.Fatalf("group list: %+v", groups)
	}
	if out := cliOK(t, "group", "describe", "readers", br); !strings.Contains(out, "TOTAL-LAG    8") {
		t.Fatalf("describe table: %q", out)
	}

	if r := seek("--to", "start", "--dry-run"); r[0].Previous != 3 || r[0].Offset != 0 {
		t.Fatalf("seek --dry-run to start: %+v", r)
	}
	if offs, _ := committed(); !slices.Equal(offs, []int64{3, 3}) {
		t.Fatalf("after --dry-run: committed %v", offs)
	}
	seek("--to", "end")
	if offs, total := committed(); !slices.Equal(offs, []int64{7, 7}) || total != 0 {
		t.Fatalf("after seek to end: committed %v, total lag %d", offs, total)
	}
	seek("--to", "@"+strconv.FormatInt(mid.UnixMilli(), 10))
	if offs, _ := committed(); !slices.Equal(offs, []int64{5, 5}) {
		t.Fatalf("after seek to @%d: committed %v", mid.UnixMilli(), offs)
	}
	seek("--to", "start")
	if offs, _ := committed(); !slices.Equal(offs, []int64{0, 0}) {
		t.Fatalf("after seek to start: committed %v", offs)
	}
	file := filepath.Join(t.TempDir(), "offsets.txt")
	if err := os.WriteFile(file, []byte("# topic partition offset\ncli-g 0 1\ncli-g\t1\t2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	seek("--to-file", file)
	if offs, total := committed(); !slices.Equal(offs, []int64{1, 2}) || total != 11 {
		t.Fatalf("after seek --to-file: committed %v, total lag %d", offs, total)
	}
	// The coordinator exports the same offsets and lag.
	for p, want := range map[string][2]int{"0": {1, 6}, "1": {2, 5}} {
		labels := `{group="readers",partition="` + p + `",topic="cli-g"}`
		if c, l := metricValue(t, metrics, "strata_consumer_group_committed_offset"+labels), metricValue(t, metrics, "strata_consumer_group_lag"+labels); c != want[0] || l != want[1] {
			t.Errorf("partition %s: metrics committed %d lag %d, want %v", p, c, l, want)
		}
	}

	// A group with a member cannot be seeked.
	cons := b.Client(kgo.ConsumeTopics("cli-g"), kgo.ConsumerGroup("readers"), kgo.DisableAutoCommit())
	ctx := testCtx(t)
	for got := 0; got < 11; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		got += fs.NumRecords()
	}
	_, errOut, code := strataCLI(t, "group", "seek", "readers", "--to", "start", br)
	if code != 1 || !strings.Contains(errOut, "a group with members cannot be seeked") {
		t.Fatalf("seek of a group with a member: exit %d, stderr %q", code, errOut)
	}
	var ds []struct {
		State   string
		Members []struct {
			MemberID string `json:"member_id"`
			Assigned []string
		}
	}
	cliJSON(t, &ds, "group", "describe", "readers", br)
	if len(ds) != 1 || ds[0].State != "Stable" || len(ds[0].Members) != 1 || len(ds[0].Members[0].Assigned) != 2 {
		t.Fatalf("describe with a member: %+v", ds)
	}
	cons.Close()
}

// TestCLIGroupKIP848: a group on the KIP-848 consumer protocol is listed
// with type consumer and described from ConsumerGroupDescribe: its member
// with its assignment, and its lag.
func TestCLIGroupKIP848(t *testing.T) {
	b := harness.Start(t, kip848Overrides())
	br := "--brokers=" + b.Addr()
	harness.CreateTopic(t, b.Admin(), "cli-848", 2, nil)
	pr := b.Client(kgo.DefaultProduceTopic("cli-848"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 6 {
		produceSync(t, pr, &kgo.Record{Partition: int32(i % 2), Value: []byte(strconv.Itoa(i))})
	}
	cons := b.Client(append(kip848Opts(), kgo.ConsumeTopics("cli-848"), kgo.ConsumerGroup("new-proto"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	defer cons.Close()
	ctx := testCtx(t)
	for got := 0; got < 6; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		got += fs.NumRecords()
	}
	// Commit offset 1 of each partition: a lag of 2 each.
	var commitErr error
	cons.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"cli-848": {0: {Epoch: -1, Offset: 1}, 1: {Epoch: -1, Offset: 1}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			commitErr = err
			if resp == nil {
				return
			}
			for _, tp := range resp.Topics {
				for _, p := range tp.Partitions {
					commitErr = errors.Join(commitErr, kerr.ErrorForCode(p.ErrorCode))
				}
			}
		})
	if commitErr != nil {
		t.Fatalf("commit: %v", commitErr)
	}
	var groups []struct{ Group, Type string }
	cliJSON(t, &groups, "group", "list", br)
	if len(groups) != 1 || groups[0].Type != "consumer" {
		t.Fatalf("group list: %+v", groups)
	}
	var ds []struct {
		Type, State string
		Members     []struct{ Assigned []string }
		TotalLag    int64 `json:"total_lag"`
	}
	waitFor(t, "the member's assignment of both partitions in describe", func() bool {
		cliJSON(t, &ds, "group", "describe", "new-proto", br)
		return len(ds) == 1 && len(ds[0].Members) == 1 && len(ds[0].Members[0].Assigned) == 2
	})
	if d := ds[0]; d.Type != "consumer" || d.State != "Stable" || d.TotalLag != 4 {
		t.Fatalf("describe: %+v", d)
	}
}
