package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestKafkaCommandArgumentErrors(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"topic"}, 1, "missing topic command"},
		{[]string{"topic", "frob"}, 1, `unknown topic command "frob"`},
		{[]string{"topic", "help"}, 0, ""},
		{[]string{"topic", "consume", "-h"}, 0, "--exit-at-end"},
		{[]string{"topic", "list", "extra"}, 1, "unexpected arguments"},
		{[]string{"topic", "list", "--format", "yaml"}, 1, `--format "yaml"`},
		{[]string{"topic", "describe"}, 1, "want one or more topics"},
		{[]string{"topic", "create", "-c", "novalue"}, 1, "want key=value"},
		{[]string{"topic", "alter-config", "t"}, 1, "nothing to alter"},
		{[]string{"topic", "produce"}, 1, "want one topic"},
		{[]string{"topic", "produce", "a", "b"}, 1, "want one topic"},
		{[]string{"topic", "produce", "t", "-k", "k", "--key-delimiter", ":"}, 1, "not both"},
		{[]string{"topic", "consume", "t", "-o", "soon"}, 1, "want start, end"},
		{[]string{"topic", "consume", "t", "-o", "@yesterday"}, 1, "@<unix ms>"},
		{[]string{"topic", "consume", "t", "-g", "g", "-p", "0"}, 1, "not both"},
		{[]string{"topic", "consume", "t", "-f", "%d{bad"}, 1, "time specification"},
		{[]string{"group", "describe"}, 1, "want one or more groups"},
		{[]string{"group", "seek", "g"}, 1, "give one of --to and --to-file"},
		{[]string{"group", "seek", "g", "--to", "end", "--to-file", "f"}, 1, "give one of --to and --to-file"},
		{[]string{"group", "seek", "g", "--to-file", "f", "--topics", "t"}, 1, "--topics goes with --to"},
		{[]string{"cluster", "health", "--interval", "0s"}, 1, "want a positive duration"},
		{[]string{"cluster", "info", "x"}, 1, "unexpected arguments"},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", tc.args, code, errOut.String(), tc.code, tc.stderr)
		}
	}
}

func TestKafkaFlagsParseInterleaved(t *testing.T) {
	var errOut bytes.Buffer
	f := newKafkaFlags("x", "usage", &errOut)
	n := f.fs.Int("n", 0, "")
	pos, err := f.parse([]string{"a", "-n", "3", "b", "--json", "c"}, 1, -1, "topics")
	if err != nil || !slices.Equal(pos, []string{"a", "b", "c"}) || *n != 3 || !f.asJSON() {
		t.Fatalf("parse: %v %v n=%d json=%v", pos, err, *n, f.asJSON())
	}
}

func TestParseConsumeStart(t *testing.T) {
	for in, want := range map[string]consumeStart{
		"start": {kind: "start"}, "end": {kind: "end"}, "42": {kind: "offset", n: 42},
		"@1700000000000": {kind: "time", n: 1700000000000}, "@2023-11-14T22:13:20Z": {kind: "time", n: 1700000000000},
	} {
		if got, err := parseConsumeStart(in); err != nil || got != want {
			t.Errorf("%s: %+v %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"-1", "", "@", "later"} {
		if _, err := parseConsumeStart(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestReadOffsetsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "offsets")
	if err := os.WriteFile(path, []byte("# comment\n\nt 0 5\nt\t1\t7\nu 3 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readOffsetsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var flat []string
	for _, o := range got.Sorted() {
		flat = append(flat, o.Topic+"/"+string(rune('0'+o.Partition))+"@"+string(rune('0'+o.At)))
	}
	if !slices.Equal(flat, []string{"t/0@5", "t/1@7", "u/3@0"}) {
		t.Fatalf("offsets %v", flat)
	}
	for _, bad := range []string{"t 0\n", "t x 1\n", "t 0 -1\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readOffsetsFile(path); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestHealthOf(t *testing.T) {
	md := kadm.Metadata{Controller: 1, Brokers: kadm.BrokerDetails{{NodeID: 1}, {NodeID: 2}}, Topics: kadm.TopicDetails{
		"t": {Topic: "t", Partitions: kadm.PartitionDetails{
			0: {Partition: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
			1: {Partition: 1, Leader: 1, Replicas: []int32{1, 3}, ISR: []int32{1}},
			2: {Partition: 2, Leader: -1, Replicas: []int32{3}, ISR: []int32{}},
			3: {Partition: 3, Leader: 3, Replicas: []int32{3, 2}, ISR: []int32{3, 2}},
		}},
	}}
	h := healthOf(md)
	if h.Healthy || !slices.Equal(h.DownBrokers, []int32{3}) || !slices.Equal(h.UnderReplicated, []string{"t-1"}) ||
		!slices.Equal(h.Offline, []string{"t-2", "t-3"}) {
		t.Fatalf("health %+v", h)
	}
	md.Topics["t"] = kadm.TopicDetail{Topic: "t", Partitions: kadm.PartitionDetails{0: {Leader: 2, Replicas: []int32{1, 2}, ISR: []int32{2, 1}}}}
	if h := healthOf(md); !h.Healthy {
		t.Fatalf("health %+v", h)
	}
	md.Controller = -1
	if h := healthOf(md); h.Healthy {
		t.Fatal("healthy without a controller")
	}
}
