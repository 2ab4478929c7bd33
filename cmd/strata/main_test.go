package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-broker/strata/broker"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte("node.id=7\nremote.log.storage.s3.secret.key=hunter2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string // substring expected in stdout
		stderr     string // substring expected in stderr
		notInOuput string
	}{
		{name: "no args", args: nil, code: 2, stderr: "usage: strata"},
		{name: "help", args: []string{"help"}, code: 0, stdout: "serve"},
		{name: "unknown", args: []string{"frobnicate"}, code: 2, stderr: `unknown command "frobnicate"`},
		{name: "version", args: []string{"version"}, code: 0, stdout: "strata dev"},
		{name: "config", args: []string{"config", "--config", props, "--set", "num.partitions=3", "--set", "log.level=debug"},
			code: 0, stdout: "node.id=7\n", notInOuput: "hunter2"},
		{name: "config changed", args: []string{"config", "--changed", "--config", props, "--set", "num.partitions=3"},
			code: 0, stdout: "num.partitions=3\n"},
		{name: "config unknown key", args: []string{"config", "--set", "log.segement.bytes=1"},
			code: 1, stderr: `strata config: config: unknown key "log.segement.bytes" (did you mean "log.segment.bytes"?) [--set]`},
		{name: "serve bad value", args: []string{"serve", "--config", props, "--set", "log.segment.bytes=abc"},
			code: 1, stderr: `strata serve: config: log.segment.bytes: invalid integer "abc" [--set]`},
		{name: "serve missing file", args: []string{"serve", "--config", filepath.Join(dir, "nope.properties")},
			code: 1, stderr: "no such file"},
		{name: "serve stray argument", args: []string{"serve", "extra"}, code: 1, stderr: "unexpected arguments"},
		{name: "serve help", args: []string{"serve", "-h"}, code: 0, stderr: "-set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tc.args, &out, &errOut)
			if code != tc.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tc.code, errOut.String())
			}
			if !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("stdout %q lacks %q", out.String(), tc.stdout)
			}
			if !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("stderr %q lacks %q", errOut.String(), tc.stderr)
			}
			if tc.notInOuput != "" && strings.Contains(out.String()+errOut.String(), tc.notInOuput) {
				t.Errorf("output reveals %q", tc.notInOuput)
			}
		})
	}
}

// adminStub is a broker admin endpoint answering path with code and body.
func adminStub(t *testing.T, routes map[string]func(w http.ResponseWriter, r *http.Request)) string {
	t.Helper()
	mux := http.NewServeMux()
	for pattern, h := range routes {
		mux.HandleFunc(pattern, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func answer(code int, v any) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(v)
	}
}

func TestTierStatusTable(t *testing.T) {
	var gotTopic string
	b1 := adminStub(t, map[string]func(http.ResponseWriter, *http.Request){
		"GET /v1/tier/status": func(w http.ResponseWriter, r *http.Request) {
			gotTopic = r.URL.Query().Get("topic")
			answer(200, broker.TierStatus{Broker: 1, TieringEnabled: true, Partitions: []broker.TierPartitionStatus{
				{Broker: 1, Topic: "t", Partition: 0, Tiered: true, Leader: true, LocalStart: 500, LocalBytes: 8817, LogEnd: 600,
					RemoteStart: 0, RemoteEnd: 499, RemoteBytes: 43803, RemoteCopies: 5, CopyLagSegments: 2, CopyLagBytes: 32768,
					LastError: "remote: copy x: put\nfailed"},
				{Broker: 1, Topic: "t", Partition: 1, Tiered: true, LocalStart: 0, LocalBytes: 10, LogEnd: 3, RemoteStart: -1, RemoteEnd: -1},
			}})(w, r)
		},
	})
	b2 := adminStub(t, map[string]func(http.ResponseWriter, *http.Request){
		"GET /v1/tier/status": answer(200, broker.TierStatus{Broker: 2, Partitions: []broker.TierPartitionStatus{
			{Broker: 2, Topic: "plain", Partition: 0, Leader: true, LocalBytes: 77, LogEnd: 9, RemoteStart: -1, RemoteEnd: -1},
		}}),
	})
	var out, errOut bytes.Buffer
	if code := run([]string{"tier", "status", "--admin", b1 + "," + b2, "--topic", "t"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want := `BROKER  TOPIC  PARTITION  ROLE      LOCAL-START  LOCAL-BYTES  LOG-END  REMOTE-START  REMOTE-END  REMOTE-BYTES  COPIES  LAG-SEGMENTS  LAG-BYTES  LAST-ERROR
1       t      0          leader    500          8817         600      0             499         43803         5       2             32768      remote: copy x: put failed
1       t      1          follower  0            10           3        -             -           0             0       -             -          -
2       plain  0          leader    0            77           9        -             -           -             -       -             -          -
broker 2: tiered storage is disabled (remote.log.storage.system.enable=false)
`
	if out.String() != want || gotTopic != "t" {
		t.Fatalf("topic %q, table:\n%s\nwant:\n%s", gotTopic, out.String(), want)
	}

	out.Reset()
	if code := run([]string{"tier", "status", "--admin", b2, "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var all []broker.TierStatus
	if err := json.Unmarshal(out.Bytes(), &all); err != nil || len(all) != 1 || all[0].Partitions[0].LocalBytes != 77 {
		t.Fatalf("json %q: %v", out.String(), err)
	}
}

func TestTierRestoreCommand(t *testing.T) {
	var req broker.TierRestoreRequest
	var startQuery url.Values
	restored := broker.TierRestoreResult{Topic: "t", TopicID: "00ff", Broker: 1, Partitions: []broker.TierRestoredPartition{
		{Partition: 0, Leader: 1, Copies: 5, RemoteStart: 0, RemoteEnd: 499, RemoteBytes: 43803, Started: true, LogEnd: 500},
		{Partition: 1, Leader: 2, Copies: 4, RemoteStart: 0, RemoteEnd: 399, RemoteBytes: 40000, LogEnd: -1},
	}, Missing: []string{"t-00ff/1/00000000000000000400-ab"}, Revision: 42}
	b1 := adminStub(t, map[string]func(http.ResponseWriter, *http.Request){
		"POST /v1/tier/restore": func(w http.ResponseWriter, r *http.Request) {
			json.NewDecoder(r.Body).Decode(&req)
			answer(200, restored)(w, r)
		},
	})
	b2 := adminStub(t, map[string]func(http.ResponseWriter, *http.Request){
		"POST /v1/tier/start": func(w http.ResponseWriter, r *http.Request) {
			startQuery = r.URL.Query()
			answer(200, broker.TierRestoreResult{Topic: "t", TopicID: "00ff", Broker: 2, Partitions: []broker.TierRestoredPartition{
				{Partition: 0, Leader: 1, LogEnd: -1}, {Partition: 1, Leader: 2, Started: true, LogEnd: 400},
			}})(w, r)
		},
	})
	conflict := adminStub(t, map[string]func(http.ResponseWriter, *http.Request){
		"POST /v1/tier/restore": answer(409, map[string]string{"error": `topic "t" exists; restore only recreates a lost topic`}),
	})

	var out, errOut bytes.Buffer
	code := run([]string{"tier", "restore", "--admin", b1, "--admin", b2, "--topic", "t", "--partitions", "3", "--config", "retention.ms=-1"}, &out, &errOut)
	want := `topic t (id 00ff)
PARTITION  LEADER  COPIES  REMOTE-START  REMOTE-END  REMOTE-BYTES  LOG-END
0          1       5       0             499         43803         500
1          2       4       0             399         40000         400
`
	if code != 0 || out.String() != want || !strings.Contains(errOut.String(), "t-00ff/1/00000000000000000400-ab") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", code, out.String(), errOut.String())
	}
	if req.Topic != "t" || req.Partitions != 3 || req.Configs["retention.ms"] != "-1" || startQuery.Get("topic") != "t" || startQuery.Get("rev") != "42" {
		t.Fatalf("restore request %+v, start query %v", req, startQuery)
	}

	out.Reset()
	errOut.Reset()
	if code := run([]string{"tier", "restore", "--admin", b1, "--topic", "t"}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "partitions 1 (broker 2) are led by brokers not given with --admin") {
		t.Fatalf("pending partition: exit %d, stderr %q", code, errOut.String())
	}
	errOut.Reset()
	if code := run([]string{"tier", "restore", "--admin", conflict, "--topic", "t"}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), `409 Conflict: topic "t" exists`) {
		t.Fatalf("conflict: exit %d, stderr %q", code, errOut.String())
	}
}

func TestTierArgumentErrors(t *testing.T) {
	closed := adminStub(t, nil)
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"tier"}, 1, "missing tier command"},
		{[]string{"tier", "frob"}, 1, `unknown tier command "frob"`},
		{[]string{"tier", "help"}, 0, ""},
		{[]string{"tier", "status", "-h"}, 0, "--admin"},
		{[]string{"tier", "status", "--admin", "nohost"}, 1, `admin address "nohost": want host:port`},
		{[]string{"tier", "status", "extra"}, 1, "unexpected arguments"},
		{[]string{"tier", "restore"}, 1, "--topic is required"},
		{[]string{"tier", "restore", "--topic", "t", "--config", "novalue"}, 1, `--config "novalue": want key=value`},
		{[]string{"tier", "restore", "--topic", "t", "--partitions", "-1"}, 1, "out of range"},
		{[]string{"tier", "status", "--admin", closed}, 1, "404 Not Found"},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", tc.args, code, errOut.String(), tc.code, tc.stderr)
		}
	}
}
