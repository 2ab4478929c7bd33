package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
